// Inside libautoheal_cuda_checks.so: the interface between the C ABI layer (module.cpp, host
// C++ with the JSON library) and the checks (*.cu, CUDA). Plain C++ types only, so the .cu files
// never include the JSON library and module.cpp never includes CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace autoheal::cuda {

// What a check reports: ordered key/value pairs, written as one JSON object.
using Value = std::variant<bool, std::int64_t, double, std::string>;
using Fields = std::vector<std::pair<std::string, Value>>;

// The outcome of a check that could not run. `message` is cudaGetErrorString's text for CUDA
// errors (or a lower-case sentence for everything else); `name` the stable cudaGetErrorName
// (cudaErrorECCUncorrectable ...) and `call` the API call that failed, empty when not CUDA.
struct [[nodiscard]] Status {
    std::string message;
    std::string name;
    std::string call;

    bool ok() const { return message.empty(); }
    static Status Ok() { return {}; }
    static Status Error(std::string message) { return {std::move(message), {}, {}}; }
};

// Returns from the enclosing function when `expr` (a Status) is an error.
#define AH_TRY(expr)                                  \
    do {                                              \
        ::autoheal::cuda::Status ah_status_ = (expr); \
        if (!ah_status_.ok()) return ah_status_;      \
    } while (0)

struct GemmParams {
    std::int64_t n = 8192;
    std::string dtype = "bf16";  // "bf16" | "fp32" | "tf32"
    std::int64_t iterations = 20;
};

struct HbmParams {
    double fraction = 0.05;
    std::uint64_t seed = 0x5eed;
};

struct CopyParams {
    std::int64_t bytes = 0;  // 0: the check's default
    std::int64_t iterations = 10;
    int peer = -1;  // p2p_bw only; -1: the next device
};

struct AllreduceParams {
    std::vector<int> devices;  // empty: every visible device
    std::int64_t bytes = 268435456;
    std::int64_t iterations = 20;
};

// REQUIRES: device is in [0, DeviceCount()). Each check selects the device itself, appends
// its results to *out and releases everything it allocated, also when it fails.
Status DeviceCount(int* count);
Status DeviceIdentity(int device, Fields* out);  // "device", "name", "pci_bus_id"
Status RunGemm(int device, const GemmParams& params, Fields* out);
Status RunHbm(int device, const HbmParams& params, Fields* out);
Status RunD2dBandwidth(int device, const CopyParams& params, Fields* out);
Status RunHostBandwidth(int device, bool to_device, const CopyParams& params, Fields* out);
Status RunP2pBandwidth(int device, const CopyParams& params, Fields* out);
Status RunNcclAllreduce(int device, const AllreduceParams& params, Fields* out);

}  // namespace autoheal::cuda
