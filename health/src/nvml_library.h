// The parts of NVML's use that the snapshot (nvml_backend.cpp) and the Xid event stream
// (xid_events.cpp) share: the library loaded with dlopen and its functions resolved, NVML's error
// text, PCI bus ids in the kernel's form. Internal to the health library.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nvml_api.h"

namespace autoheal::health {

using nvml::Api;

// The dlopen'd library; dlclose on destruction.
class NvmlLibrary {
  public:
    explicit NvmlLibrary(const std::string& path) {
        dlerror();
        handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_ == nullptr) error_ = LastDlError();
    }
    ~NvmlLibrary() {
        if (handle_ != nullptr) dlclose(handle_);
    }
    NvmlLibrary(const NvmlLibrary&) = delete;
    NvmlLibrary& operator=(const NvmlLibrary&) = delete;

    bool loaded() const { return handle_ != nullptr; }
    const std::string& error() const { return error_; }

    // Fills every pointer the library has; the others stay nullptr.
    void Resolve(Api* api) const {
#define AUTOHEAL_NVML_RESOLVE(name, ret, params) \
    api->name = reinterpret_cast<decltype(api->name)>(dlsym(handle_, #name));
        AUTOHEAL_NVML_FUNCTIONS(AUTOHEAL_NVML_RESOLVE)
#undef AUTOHEAL_NVML_RESOLVE
    }

    // Why dlsym finds no `name` (Resolve's later lookups have overwritten dlerror()).
    std::string SymbolError(const char* name) const {
        dlerror();
        if (dlsym(handle_, name) != nullptr) return "";
        return LastDlError();
    }

  private:
    static std::string LastDlError() {
        const char* e = dlerror();
        return e != nullptr ? e : "unknown dlopen error";
    }

    void* handle_ = nullptr;
    std::string error_;
};

inline std::string ErrorText(const Api& api, nvmlReturn_t rc) {
    if (api.nvmlErrorString != nullptr) {
        const char* s = api.nvmlErrorString(rc);
        if (s != nullptr && *s != '\0') return s;
    }
    return "NVML error " + std::to_string(static_cast<int>(rc));
}

// "00000000:3B:00.0" -> "0000:3b:00.0" (the form Linux uses in sysfs and the kernel log).
inline std::string NormalizeBusId(const char* nvml_bus_id) {
    std::string id(nvml_bus_id);
    std::string lower;
    for (char c : id) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t colon = lower.find(':');
    if (colon == std::string::npos || colon == 0) return lower;
    const std::string domain = lower.substr(0, colon);
    if (!std::all_of(domain.begin(), domain.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
        return lower;
    }
    const unsigned long value = std::strtoul(domain.c_str(), nullptr, 16);
    char buf[24];
    std::snprintf(buf, sizeof(buf), "%04lx", value);
    return buf + lower.substr(colon);
}

inline std::string FromBuffer(const char* buf, std::size_t size) {
    std::size_t n = 0;
    while (n < size && buf[n] != '\0') ++n;
    return std::string(buf, n);
}

}  // namespace autoheal::health
