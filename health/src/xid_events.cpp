#include "autoheal/health/xid_events.h"

#include <unistd.h>

#include <cerrno>

#include "nvml_api.h"
#include "nvml_library.h"

namespace autoheal::health {
namespace {

// Writes all of `line`; false when the reader is gone (the stream then ends).
bool Say(int fd, const std::string& line) {
    std::size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

int StreamXidEvents(const std::string& library, int fd, unsigned wait_ms) {
    auto fail = [fd](const std::string& why) {
        Say(fd, "error " + why + "\n");
        return 1;
    };
    NvmlLibrary lib(library);
    if (!lib.loaded()) return fail("no NVIDIA driver: " + lib.error());
    Api api;
    lib.Resolve(&api);
    for (const auto& [fn, name] :
         {std::pair<bool, const char*>{api.nvmlInit_v2 != nullptr, "nvmlInit_v2"},
          {api.nvmlDeviceGetCount_v2 != nullptr, "nvmlDeviceGetCount_v2"},
          {api.nvmlDeviceGetHandleByIndex_v2 != nullptr, "nvmlDeviceGetHandleByIndex_v2"},
          {api.nvmlEventSetCreate != nullptr, "nvmlEventSetCreate"},
          {api.nvmlDeviceRegisterEvents != nullptr, "nvmlDeviceRegisterEvents"},
          {api.nvmlEventSetWait_v2 != nullptr, "nvmlEventSetWait_v2"}}) {
        if (!fn) return fail("NVML without events: " + lib.SymbolError(name));
    }
    if (nvmlReturn_t rc = api.nvmlInit_v2(); rc != NVML_SUCCESS) {
        return fail("nvmlInit_v2: " + ErrorText(api, rc));
    }
    nvmlEventSet_t set = nullptr;
    if (nvmlReturn_t rc = api.nvmlEventSetCreate(&set); rc != NVML_SUCCESS) {
        return fail("nvmlEventSetCreate: " + ErrorText(api, rc));
    }
    unsigned count = 0;
    unsigned registered = 0;
    if (api.nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS) count = 0;
    for (unsigned i = 0; i < count; ++i) {
        nvmlDevice_t device = nullptr;
        if (api.nvmlDeviceGetHandleByIndex_v2(i, &device) == NVML_SUCCESS &&
            api.nvmlDeviceRegisterEvents(device, nvmlEventTypeXidCriticalError, set) ==
                NVML_SUCCESS) {
            ++registered;
        }
    }
    if (registered == 0) return fail("no GPU of " + std::to_string(count) + " takes Xid events");
    for (;;) {
        nvmlEventData_t event{};
        const nvmlReturn_t rc = api.nvmlEventSetWait_v2(set, &event, wait_ms);
        if (rc == NVML_ERROR_TIMEOUT) {
            if (!Say(fd, ".\n")) return 0;
            continue;
        }
        if (rc != NVML_SUCCESS) return fail("nvmlEventSetWait_v2: " + ErrorText(api, rc));
        if ((event.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
        std::string bus = "unknown";
        nvmlPciInfo_t pci{};
        if (api.nvmlDeviceGetPciInfo_v3 != nullptr &&
            api.nvmlDeviceGetPciInfo_v3(event.device, &pci) == NVML_SUCCESS) {
            bus = NormalizeBusId(pci.busId);
        }
        if (!Say(fd, "xid " + bus + " " + std::to_string(event.eventData) + "\n")) return 0;
    }
}

}  // namespace autoheal::health
