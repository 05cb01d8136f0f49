// The C ABI of libautoheal_cuda_checks.so (autoheal_cuda_checks.h): parses the parameters,
// runs one check and writes its JSON. Every entry point goes through Guard (noexcept), so no
// exception crosses into the caller; the checks themselves return Status values.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "autoheal_cuda_checks.h"
#include "checks_internal.h"

#define AUTOHEAL_CUDA_EXPORT __attribute__((visibility("default")))

namespace autoheal::cuda {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::int64_t kMiB = 1LL << 20;
constexpr std::int64_t kGiB = 1LL << 30;

// Measured values keep 5 significant digits: enough to compare GPUs, short to read.
double Round(double value) {
    if (value == 0 || !std::isfinite(value)) return value;
    const double scale =
        std::pow(10.0, 4 - static_cast<int>(std::floor(std::log10(std::fabs(value)))));
    return std::round(value * scale) / scale;
}

Json ToJson(const Fields& fields) {
    Json json = Json::object();
    for (const auto& [key, value] : fields) {
        std::visit(
            [&, &key = key](const auto& v) {
                if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) {
                    json[key] = Round(v);
                } else {
                    json[key] = v;
                }
            },
            value);
    }
    return json;
}

Json ErrorJson(const Status& status) {
    Json json = {{"error", status.message}};
    if (!status.name.empty()) json["error_name"] = status.name;
    if (!status.call.empty()) json["call"] = status.call;
    return json;
}

// Writes `json` into out (NUL-terminated); -1 when it does not fit (out then says so if it can).
int Write(const Json& json, char* out, std::size_t out_len, int rc) {
    if (out == nullptr || out_len == 0) return -1;
    std::string text = json.dump();
    if (text.size() + 1 > out_len) {
        text = Json{{"error", "output buffer too small"}, {"needed_bytes", text.size() + 1}}.dump();
        rc = -1;
        if (text.size() + 1 > out_len) {
            out[0] = '\0';
            return -1;
        }
    }
    std::memcpy(out, text.c_str(), text.size() + 1);
    return rc;
}

// --- parameters ------------------------------------------------------------------------------
// Every key is optional; unknown keys and values out of range are refused by name, so a typo
// in autoheal's configuration does not silently run the default.
class Params {
  public:
    explicit Params(Json json) : json_(std::move(json)) {}

    Status RefuseUnknown(std::string_view check,
                         std::initializer_list<std::string_view> known) const {
        for (const auto& [key, value] : json_.items()) {
            bool ok = false;
            for (std::string_view k : known) ok = ok || key == k;
            if (!ok)
                return Status::Error("params: unknown key '" + key + "' for check '" +
                                     std::string(check) + "'");
        }
        return Status::Ok();
    }
    Status Integer(const char* key, std::int64_t min, std::int64_t max, std::int64_t* value) const {
        if (!json_.contains(key)) return Status::Ok();
        const Json& v = json_[key];
        if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > max) {
            return Status::Error(std::string("params: '") + key + "' must be an integer in [" +
                                 std::to_string(min) + ", " + std::to_string(max) + "]");
        }
        *value = v.get<std::int64_t>();
        return Status::Ok();
    }
    Status Number(const char* key, double min, double max, double* value) const {
        if (!json_.contains(key)) return Status::Ok();
        const Json& v = json_[key];
        if (!v.is_number() || !(v.get<double>() > min) || v.get<double>() > max) {
            return Status::Error(std::string("params: '") + key + "' must be a number in (" +
                                 std::to_string(min) + ", " + std::to_string(max) + "]");
        }
        *value = v.get<double>();
        return Status::Ok();
    }
    Status Choice(const char* key, std::initializer_list<std::string_view> choices,
                  std::string* value) const {
        if (!json_.contains(key)) return Status::Ok();
        const Json& v = json_[key];
        if (v.is_string()) {
            for (std::string_view c : choices) {
                if (v.get<std::string>() == c) {
                    *value = c;
                    return Status::Ok();
                }
            }
        }
        std::string list;
        for (std::string_view c : choices) list += (list.empty() ? "" : "|") + std::string(c);
        return Status::Error(std::string("params: '") + key + "' must be one of " + list);
    }
    Status IntegerList(const char* key, std::vector<int>* value) const {
        if (!json_.contains(key)) return Status::Ok();
        const Json& v = json_[key];
        Status error =
            Status::Error(std::string("params: '") + key + "' must be a list of device indices");
        if (!v.is_array()) return error;
        for (const Json& item : v) {
            if (!item.is_number_integer() || item.get<std::int64_t>() < 0 ||
                item.get<std::int64_t>() > 1023)
                return error;
            value->push_back(item.get<int>());
        }
        return Status::Ok();
    }

  private:
    Json json_;
};

Status ParseCopy(const Params& p, std::string_view check, std::int64_t max_bytes, CopyParams* c) {
    const bool p2p = check == "p2p_bw";
    AH_TRY(p2p ? p.RefuseUnknown(check, {"bytes", "iterations", "peer"})
               : p.RefuseUnknown(check, {"bytes", "iterations"}));
    AH_TRY(p.Integer("bytes", kMiB, max_bytes, &c->bytes));
    AH_TRY(p.Integer("iterations", 1, 1000, &c->iterations));
    std::int64_t peer = -1;
    AH_TRY(p.Integer("peer", 0, 1023, &peer));
    c->peer = static_cast<int>(peer);
    return Status::Ok();
}

// A check with its parameters parsed: runs on one device and appends its results.
using PreparedCheck = std::function<Status(int device, Fields* out)>;

// Parses `check`'s parameters (no CUDA call: a bad request is refused even without a GPU).
Status Prepare(std::string_view check, const Params& p, PreparedCheck* run) {
    if (check == "gemm") {
        GemmParams g;
        AH_TRY(p.RefuseUnknown(check, {"n", "dtype", "iterations"}));
        AH_TRY(p.Integer("n", 64, 32768, &g.n));
        AH_TRY(p.Choice("dtype", {"bf16", "fp32", "tf32"}, &g.dtype));
        AH_TRY(p.Integer("iterations", 1, 10000, &g.iterations));
        *run = [g](int device, Fields* out) { return RunGemm(device, g, out); };
        return Status::Ok();
    }
    if (check == "hbm") {
        HbmParams h;
        auto seed = static_cast<std::int64_t>(h.seed);
        AH_TRY(p.RefuseUnknown(check, {"fraction", "seed"}));
        AH_TRY(p.Number("fraction", 0.0, 0.95, &h.fraction));
        AH_TRY(p.Integer("seed", 0, INT64_MAX, &seed));
        h.seed = static_cast<std::uint64_t>(seed);
        *run = [h](int device, Fields* out) { return RunHbm(device, h, out); };
        return Status::Ok();
    }
    if (check == "d2d_bw") {
        CopyParams c;
        AH_TRY(ParseCopy(p, check, 16 * kGiB, &c));
        *run = [c](int device, Fields* out) { return RunD2dBandwidth(device, c, out); };
        return Status::Ok();
    }
    if (check == "h2d_bw" || check == "d2h_bw") {
        CopyParams c;
        AH_TRY(ParseCopy(p, check, 4 * kGiB, &c));
        const bool to_device = check == "h2d_bw";
        *run = [c, to_device](int device, Fields* out) {
            return RunHostBandwidth(device, to_device, c, out);
        };
        return Status::Ok();
    }
    if (check == "p2p_bw") {
        CopyParams c;
        AH_TRY(ParseCopy(p, check, 16 * kGiB, &c));
        *run = [c](int device, Fields* out) { return RunP2pBandwidth(device, c, out); };
        return Status::Ok();
    }
    if (check == "nccl_allreduce") {
        AllreduceParams a;
        AH_TRY(p.RefuseUnknown(check, {"devices", "bytes", "iterations"}));
        AH_TRY(p.IntegerList("devices", &a.devices));
        AH_TRY(p.Integer("bytes", kMiB, 16 * kGiB, &a.bytes));
        AH_TRY(p.Integer("iterations", 1, 1000, &a.iterations));
        *run = [a](int device, Fields* out) { return RunNcclAllreduce(device, a, out); };
        return Status::Ok();
    }
    return Status::Error("unknown check: " + std::string(check));
}

int Run(const char* check, int device, const char* params_json, char* out, std::size_t out_len) {
    const auto start = std::chrono::steady_clock::now();
    auto fail = [&](const Status& status) {
        Json json = ErrorJson(status);
        if (check != nullptr) json["check"] = check;
        json["device"] = device;
        return Write(json, out, out_len, -1);
    };
    if (check == nullptr) return fail(Status::Error("no check named"));
    Json params = Json::object();
    if (params_json != nullptr && params_json[0] != '\0') {
        params = Json::parse(params_json, nullptr, /*allow_exceptions=*/false);
        if (params.is_discarded() || !params.is_object()) {
            return fail(Status::Error("params: not a JSON object"));
        }
    }
    PreparedCheck run;
    if (Status status = Prepare(check, Params(std::move(params)), &run); !status.ok()) {
        return fail(status);
    }
    int count = 0;
    if (Status status = DeviceCount(&count); !status.ok()) return fail(status);
    if (device < 0 || device >= count) {
        return fail({"invalid device ordinal", "cudaErrorInvalidDevice", "cudaSetDevice"});
    }
    Fields identity;
    if (Status status = DeviceIdentity(device, &identity); !status.ok()) return fail(status);
    Fields results;
    if (Status status = run(device, &results); !status.ok()) return fail(status);
    results.insert(results.end(), identity.begin(), identity.end());
    results.emplace_back(
        "seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return Write(ToJson(results), out, out_len, 0);
}

// The exception firewall: whatever escapes (std::bad_alloc, a JSON error) becomes an error.
template <class Body>
int Guard(char* out, std::size_t out_len, Body body) noexcept {
    try {
        return body();
    } catch (const std::exception& e) {
        try {
            return Write(Json{{"error", std::string("internal: ") + e.what()}}, out, out_len, -1);
        } catch (...) {
        }
    } catch (...) {
    }
    if (out != nullptr && out_len > 0) out[0] = '\0';
    return -1;
}

}  // namespace
}  // namespace autoheal::cuda

extern "C" {

AUTOHEAL_CUDA_EXPORT int autoheal_cuda_abi_version(void) { return AUTOHEAL_CUDA_ABI_VERSION; }

AUTOHEAL_CUDA_EXPORT int autoheal_cuda_device_count(void) {
    return autoheal::cuda::Guard(nullptr, 0, [] {
        int count = 0;
        return autoheal::cuda::DeviceCount(&count).ok() ? count : -1;
    });
}

AUTOHEAL_CUDA_EXPORT int autoheal_cuda_run(const char* check, int device, const char* params_json,
                                           char* out, size_t out_len) {
    return autoheal::cuda::Guard(out, out_len, [&] {
        return autoheal::cuda::Run(check, device, params_json, out, out_len);
    });
}

}  // extern "C"
