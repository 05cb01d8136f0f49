// NVIDIA's NVML C API: the subset autoheal uses, declared by this project so that it builds
// without nvml.h or a driver. Types, values and layouts are those of NVIDIA's public nvml.h
// (API version 12); each function is listed once in AUTOHEAL_NVML_FUNCTIONS and expanded into the
// function-pointer table the backend fills with dlsym (nvml_backend.cpp) and into the prototypes
// the fake libnvidia-ml.so.1 defines (tests/fakes/fake_nvml), so both are checked against the
// same list.
//
// Not verified against a real driver here (no GPU, no nvml.h on the build machine): the values
// were taken from nvml.h as published in NVIDIA/DCGM (sdk/nvidia/nvml/nvml.h) and cross-checked
// with other public copies; NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230) and the recovery action
// values come from NVIDIA's Python bindings (nvidia-ml-py) and were not found in that nvml.h copy.
#pragma once

// ---- Types, global like nvml.h's. ----------------------------------------------------------

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st* nvmlDevice_t;

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlMemoryErrorType_enum {
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
    NVML_MEMORY_ERROR_TYPE_COUNT
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
    NVML_VOLATILE_ECC = 0,   // reset each time the driver loads
    NVML_AGGREGATE_ECC = 1,  // lifetime of the device
    NVML_ECC_COUNTER_TYPE_COUNT
} nvmlEccCounterType_t;

typedef enum nvmlMemoryLocation_enum {
    NVML_MEMORY_LOCATION_L1_CACHE = 0,
    NVML_MEMORY_LOCATION_L2_CACHE = 1,
    NVML_MEMORY_LOCATION_DRAM = 2,  // Turing+
    NVML_MEMORY_LOCATION_DEVICE_MEMORY = 2,
    NVML_MEMORY_LOCATION_REGISTER_FILE = 3,
    NVML_MEMORY_LOCATION_TEXTURE_MEMORY = 4,
    NVML_MEMORY_LOCATION_TEXTURE_SHM = 5,
    NVML_MEMORY_LOCATION_CBU = 6,
    NVML_MEMORY_LOCATION_SRAM = 7,  // Turing+
    NVML_MEMORY_LOCATION_COUNT
} nvmlMemoryLocation_t;

typedef enum nvmlPageRetirementCause_enum {
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
    NVML_PAGE_RETIREMENT_CAUSE_COUNT
} nvmlPageRetirementCause_t;

typedef enum nvmlTemperatureSensors_enum {
    NVML_TEMPERATURE_GPU = 0,
    NVML_TEMPERATURE_COUNT
} nvmlTemperatureSensors_t;

typedef enum nvmlTemperatureThresholds_enum {
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
    NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
    NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
    NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN = 4,
    NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR = 5,
    NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX = 6,
    NVML_TEMPERATURE_THRESHOLD_GPS_CURR = 7,
    NVML_TEMPERATURE_THRESHOLD_COUNT
} nvmlTemperatureThresholds_t;

typedef enum nvmlNvLinkErrorCounter_enum {
    NVML_NVLINK_ERROR_DL_REPLAY = 0,    // data link transmit replay
    NVML_NVLINK_ERROR_DL_RECOVERY = 1,  // data link transmit recovery
    NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,  // data link receive flow control digit CRC
    NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
    NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
    NVML_NVLINK_ERROR_COUNT
} nvmlNvLinkErrorCounter_t;

#define NVML_NVLINK_MAX_LINKS 18

typedef enum nvmlValueType_enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
    NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
    NVML_VALUE_TYPE_COUNT
} nvmlValueType_t;

typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

// nvmlDeviceGetFieldValues: the caller sets fieldId (and scopeId); NVML fills the rest. `value`
// is only meaningful when nvmlReturn is NVML_SUCCESS.
typedef struct nvmlFieldValue_st {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;  // microseconds since 1970
    long long latencyUsec;
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

// Field id of the driver's recommended recovery action (R570+; Xid 154 reports changes).
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230

typedef enum nvmlDeviceGpuRecoveryAction_s {
    NVML_GPU_RECOVERY_ACTION_NONE = 0,
    NVML_GPU_RECOVERY_ACTION_GPU_RESET = 1,
    NVML_GPU_RECOVERY_ACTION_NODE_REBOOT = 2,
    NVML_GPU_RECOVERY_ACTION_DRAIN_P2P = 3,
    NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET = 4
} nvmlDeviceGpuRecoveryAction_t;

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80

// The layout nvmlDeviceGetPciInfo_v3 fills. busId is "%08X:%02X:%02X.0" ("00000000:3B:00.0").
typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];  // "%04X:%02X:%02X.0"
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;     // 16-bit device id << 16 | 16-bit vendor id
    unsigned int pciSubSystemId;  // since NVML 2.285
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

// nvmlDeviceGetUtilizationRates: percent of the last sample period (1/6 s to 1 s, by product)
// during which a kernel ran (gpu) and device memory was read or written (memory).
typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

// nvmlProcessInfo_v2_t, the element type of the _v3 process queries.
typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;      // 0xFFFFFFFF without MIG
    unsigned int computeInstanceId;  // 0xFFFFFFFF without MIG
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

// nvmlDeviceGetClockInfo's clock domains.
typedef enum nvmlClockType_enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3,
    NVML_CLOCK_COUNT
} nvmlClockType_t;

// nvmlDeviceGetViolationStatus's policies: what held the clocks below the application clocks.
typedef enum nvmlPerfPolicyType_enum {
    NVML_PERF_POLICY_POWER = 0,
    NVML_PERF_POLICY_THERMAL = 1,
    NVML_PERF_POLICY_SYNC_BOOST = 2,
    NVML_PERF_POLICY_BOARD_LIMIT = 3,
    NVML_PERF_POLICY_LOW_UTILIZATION = 4,
    NVML_PERF_POLICY_RELIABILITY = 5,
    NVML_PERF_POLICY_TOTAL_APP_CLOCKS = 10,
    NVML_PERF_POLICY_TOTAL_BASE_CLOCKS = 11,
    NVML_PERF_POLICY_COUNT
} nvmlPerfPolicyType_t;

// referenceTime: a CPU timestamp in microseconds; violationTime: nanoseconds of violation since
// the driver loaded (a counter that only grows).
typedef struct nvmlViolationTime_st {
    unsigned long long referenceTime;
    unsigned long long violationTime;
} nvmlViolationTime_t;

// nvmlClocksEventReason* bits (gpu_snapshot.h names the ones the checks use).
#define nvmlClocksEventReasonGpuIdle 0x0000000000000001ULL
#define nvmlClocksEventReasonApplicationsClocksSetting 0x0000000000000002ULL
#define nvmlClocksEventReasonSwPowerCap 0x0000000000000004ULL
#define nvmlClocksEventReasonHwSlowdown 0x0000000000000008ULL
#define nvmlClocksEventReasonSyncBoost 0x0000000000000010ULL
#define nvmlClocksEventReasonSwThermalSlowdown 0x0000000000000020ULL
#define nvmlClocksEventReasonHwThermalSlowdown 0x0000000000000040ULL
#define nvmlClocksEventReasonHwPowerBrakeSlowdown 0x0000000000000080ULL
#define nvmlClocksEventReasonDisplayClockSetting 0x0000000000000100ULL

// Event sets (nvmlEventSetWait_v2's layout, R450 and later: the MIG instance ids follow).
typedef struct nvmlEventSet_st* nvmlEventSet_t;

typedef struct nvmlEventData_st {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;  // for an Xid event, the Xid (999: unknown)
    unsigned int gpuInstanceId;    // 0xFFFFFFFF when not attributable to a MIG instance
    unsigned int computeInstanceId;
} nvmlEventData_t;

#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL

// ---- Functions. ----------------------------------------------------------------------------
// X(name, return type, parenthesised parameter list). Every function autoheal calls, with the
// exact exported symbol name (the versioned ones, as nvml.h's macros would pick).
#define AUTOHEAL_NVML_FUNCTIONS(X)                                                                 \
    X(nvmlInit_v2, nvmlReturn_t, (void))                                                           \
    X(nvmlShutdown, nvmlReturn_t, (void))                                                          \
    X(nvmlErrorString, const char*, (nvmlReturn_t result))                                         \
    X(nvmlSystemGetDriverVersion, nvmlReturn_t, (char* version, unsigned int length))              \
    X(nvmlSystemGetNVMLVersion, nvmlReturn_t, (char* version, unsigned int length))                \
    X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int* deviceCount))                            \
    X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int index, nvmlDevice_t* device))     \
    X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char* name, unsigned int length))     \
    X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char* uuid, unsigned int length))     \
    X(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t * pci))           \
    X(nvmlDeviceGetSerial, nvmlReturn_t, (nvmlDevice_t device, char* serial, unsigned int length)) \
    X(nvmlDeviceGetMinorNumber, nvmlReturn_t, (nvmlDevice_t device, unsigned int* minorNumber))    \
    X(nvmlDeviceGetTotalEccErrors, nvmlReturn_t,                                                   \
      (nvmlDevice_t device, nvmlMemoryErrorType_t errorType, nvmlEccCounterType_t counterType,     \
       unsigned long long* eccCounts))                                                             \
    X(nvmlDeviceGetMemoryErrorCounter, nvmlReturn_t,                                               \
      (nvmlDevice_t device, nvmlMemoryErrorType_t errorType, nvmlEccCounterType_t counterType,     \
       nvmlMemoryLocation_t locationType, unsigned long long* count))                              \
    X(nvmlDeviceGetRemappedRows, nvmlReturn_t,                                                     \
      (nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows,                         \
       unsigned int* isPending, unsigned int* failureOccurred))                                    \
    X(nvmlDeviceGetRetiredPages_v2, nvmlReturn_t,                                                  \
      (nvmlDevice_t device, nvmlPageRetirementCause_t cause, unsigned int* pageCount,              \
       unsigned long long* addresses, unsigned long long* timestamps))                             \
    X(nvmlDeviceGetRetiredPagesPendingStatus, nvmlReturn_t,                                        \
      (nvmlDevice_t device, nvmlEnableState_t * isPending))                                        \
    X(nvmlDeviceGetFieldValues, nvmlReturn_t,                                                      \
      (nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values))                            \
    X(nvmlDeviceGetCurrPcieLinkGeneration, nvmlReturn_t,                                           \
      (nvmlDevice_t device, unsigned int* currLinkGen))                                            \
    X(nvmlDeviceGetMaxPcieLinkGeneration, nvmlReturn_t,                                            \
      (nvmlDevice_t device, unsigned int* maxLinkGen))                                             \
    X(nvmlDeviceGetCurrPcieLinkWidth, nvmlReturn_t,                                                \
      (nvmlDevice_t device, unsigned int* currLinkWidth))                                          \
    X(nvmlDeviceGetMaxPcieLinkWidth, nvmlReturn_t,                                                 \
      (nvmlDevice_t device, unsigned int* maxLinkWidth))                                           \
    X(nvmlDeviceGetNvLinkState, nvmlReturn_t,                                                      \
      (nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive))                       \
    X(nvmlDeviceGetNvLinkErrorCounter, nvmlReturn_t,                                               \
      (nvmlDevice_t device, unsigned int link, nvmlNvLinkErrorCounter_t counter,                   \
       unsigned long long* counterValue))                                                          \
    X(nvmlDeviceGetTemperature, nvmlReturn_t,                                                      \
      (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int* temp))              \
    X(nvmlDeviceGetTemperatureThreshold, nvmlReturn_t,                                             \
      (nvmlDevice_t device, nvmlTemperatureThresholds_t thresholdType, unsigned int* temp))        \
    X(nvmlDeviceGetCurrentClocksEventReasons, nvmlReturn_t,                                        \
      (nvmlDevice_t device, unsigned long long* clocksEventReasons))                               \
    X(nvmlDeviceGetCurrentClocksThrottleReasons, nvmlReturn_t,                                     \
      (nvmlDevice_t device, unsigned long long* clocksThrottleReasons))                            \
    X(nvmlDeviceGetPersistenceMode, nvmlReturn_t, (nvmlDevice_t device, nvmlEnableState_t * mode)) \
    X(nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t,                                       \
      (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos))                    \
    X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t * memory))         \
    X(nvmlDeviceGetUtilizationRates, nvmlReturn_t,                                                 \
      (nvmlDevice_t device, nvmlUtilization_t * utilization))                                      \
    X(nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t device, unsigned int* power))           \
    X(nvmlDeviceGetClockInfo, nvmlReturn_t,                                                        \
      (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock))                            \
    X(nvmlDeviceGetViolationStatus, nvmlReturn_t,                                                  \
      (nvmlDevice_t device, nvmlPerfPolicyType_t perfPolicyType, nvmlViolationTime_t * violTime))  \
    X(nvmlEventSetCreate, nvmlReturn_t, (nvmlEventSet_t * set))                                    \
    X(nvmlDeviceRegisterEvents, nvmlReturn_t,                                                      \
      (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set))                    \
    X(nvmlEventSetWait_v2, nvmlReturn_t,                                                           \
      (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms))                        \
    X(nvmlEventSetFree, nvmlReturn_t, (nvmlEventSet_t set))

namespace autoheal::health::nvml {

// One pointer per function; nullptr where the loaded library lacks the symbol (older drivers).
struct Api {
// `ret` and `params` are a declarator's parts: they cannot be parenthesized.
#define AUTOHEAL_NVML_POINTER(name, ret, params) \
    ret(*name) params = nullptr;  // NOLINT(bugprone-macro-parentheses)
    AUTOHEAL_NVML_FUNCTIONS(AUTOHEAL_NVML_POINTER)
#undef AUTOHEAL_NVML_POINTER
};

}  // namespace autoheal::health::nvml
