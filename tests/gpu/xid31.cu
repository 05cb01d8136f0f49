// One real Xid 31 for tests/gpu/agent_nvml.sh: a kernel writes through a null pointer, the GPU's
// MMU faults, the driver logs "NVRM: Xid (PCI:...): 31, pid=..., name=xid31, ..." and reports Xid
// 31 through NVML's event API, and this context dies with cudaErrorIllegalAddress. The fault is the
// application's: the driver recovers, no reset, nothing else on the GPU is touched.
//   xid31 [DEVICE]    exits 0 when the kernel faulted as expected
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void WriteThroughNull(int* p) { *p = 31; }

int main(int argc, char** argv) {
    const int device = argc > 1 ? std::atoi(argv[1]) : 0;
    if (cudaSetDevice(device) != cudaSuccess) {
        std::fprintf(stderr, "xid31: no CUDA device %d\n", device);
        return 2;
    }
    WriteThroughNull<<<1, 1>>>(nullptr);
    const cudaError_t e = cudaDeviceSynchronize();
    std::printf("xid31: device %d: %s\n", device, cudaGetErrorString(e));
    return e == cudaErrorIllegalAddress ? 0 : 1;
}
