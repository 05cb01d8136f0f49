// One real application fault on a GPU for tests/gpu/agent_nvml.sh: the driver logs an Xid for it
// ("NVRM: Xid (PCI:...): N, pid=..., name=app_fault, ...") and reports it through NVML's event
// API, and this context dies. The fault is the application's: the driver recovers, no reset,
// nothing else on the GPU is touched.
//   app_fault null [DEVICE]         a kernel writes through a null pointer: the MMU faults,
//                                   Xid 31, cudaErrorIllegalAddress
//   app_fault misaligned [DEVICE]   a kernel reads an int at an odd address: an SM warp
//                                   exception, Xid 13, cudaErrorMisalignedAddress
// Exits 0 when the kernel faulted as expected, 1 when it did not, 2 on usage or no device.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void WriteThroughNull(int* p) { *p = 31; }

__global__ void ReadMisaligned(const char* base, int* out) {
    *out = *reinterpret_cast<const int*>(base + 1);
}

int main(int argc, char** argv) {
    if (argc < 2 ||
        (std::strcmp(argv[1], "null") != 0 && std::strcmp(argv[1], "misaligned") != 0)) {
        std::fprintf(stderr, "usage: app_fault null|misaligned [DEVICE]\n");
        return 2;
    }
    const bool null = std::strcmp(argv[1], "null") == 0;
    const int device = argc > 2 ? std::atoi(argv[2]) : 0;
    if (cudaSetDevice(device) != cudaSuccess) {
        std::fprintf(stderr, "app_fault: no CUDA device %d\n", device);
        return 2;
    }
    cudaError_t expected = cudaErrorIllegalAddress;
    if (null) {
        WriteThroughNull<<<1, 1>>>(nullptr);
    } else {
        char* buffer = nullptr;
        if (cudaMalloc(&buffer, 64) != cudaSuccess) return 2;
        ReadMisaligned<<<1, 1>>>(buffer, reinterpret_cast<int*>(buffer + 32));
        expected = cudaErrorMisalignedAddress;
    }
    const cudaError_t e = cudaDeviceSynchronize();
    std::printf("app_fault %s: device %d: %s\n", argv[1], device, cudaGetErrorString(e));
    return e == expected ? 0 : 1;
}
