// Loads for tests/gpu/hang_activity.sh: what NVML's utilization shows for a GPU that works and for
// one that spins. autoheal-agent's hang watch takes a GPU as working only when both its
// utilization and its memory utilization reach 5 % (agent/include/autoheal/agent/hang_watch.h):
// a rank stuck in an NCCL collective keeps a kernel polling a flag, busy with memory at rest.
//   gpu_activity pci                 prints the PCI bus id of the GPU the loads run on (device 0)
//   gpu_activity spin|gemm|copy SECONDS
//     spin  one block per SM polls a flag in device memory that never changes (a stuck collective)
//     gemm  bf16 8192x8192 products through cuBLAS, back to back (a training step's bulk)
//     copy  1 GiB device-to-device copies, back to back (data loading, optimizer steps)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

__device__ unsigned long long GlobalNs() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void PollFlag(const volatile int* flag, unsigned long long ns) {
    const unsigned long long end = GlobalNs() + ns;
    while (*flag == 0 && GlobalNs() < end) {
    }
}

bool Ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    std::fprintf(stderr, "gpu_activity: %s: %s\n", what, cudaGetErrorString(e));
    return false;
}

int Spin(double seconds) {
    int* flag = nullptr;
    int sms = 0;
    if (!Ok(cudaMalloc(&flag, sizeof(int)), "cudaMalloc") ||
        !Ok(cudaMemset(flag, 0, sizeof(int)), "cudaMemset") ||
        !Ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute")) {
        return 1;
    }
    PollFlag<<<sms, 32>>>(flag, static_cast<unsigned long long>(seconds * 1e9));
    return Ok(cudaDeviceSynchronize(), "spin") ? 0 : 1;
}

template <typename Step>
int Repeat(double seconds, Step step) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 10; ++i) {
            if (!step()) return 1;
        }
        if (!Ok(cudaDeviceSynchronize(), "step")) return 1;
    }
    return 0;
}

int Gemm(double seconds) {
    constexpr int n = 8192;
    const size_t bytes = sizeof(__nv_bfloat16) * n * n;
    void *a = nullptr, *b = nullptr, *c = nullptr;
    cublasHandle_t h = nullptr;
    if (!Ok(cudaMalloc(&a, bytes), "cudaMalloc") || !Ok(cudaMalloc(&b, bytes), "cudaMalloc") ||
        !Ok(cudaMalloc(&c, bytes), "cudaMalloc") || !Ok(cudaMemset(a, 0, bytes), "cudaMemset") ||
        !Ok(cudaMemset(b, 0, bytes), "cudaMemset") || cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        return 1;
    }
    const float one = 1.0f, zero = 0.0f;
    return Repeat(seconds, [&] {
        return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b,
                            CUDA_R_16BF, n, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    });
}

int Copy(double seconds) {
    const size_t bytes = size_t{1} << 30;
    void *from = nullptr, *to = nullptr;
    if (!Ok(cudaMalloc(&from, bytes), "cudaMalloc") || !Ok(cudaMalloc(&to, bytes), "cudaMalloc")) {
        return 1;
    }
    return Repeat(seconds, [&] {
        return Ok(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice), "copy");
    });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "pci") == 0) {
        char bus[32] = {};
        if (!Ok(cudaDeviceGetPCIBusId(bus, sizeof bus, 0), "cudaDeviceGetPCIBusId")) return 1;
        std::printf("%s\n", bus);
        return 0;
    }
    if (argc != 3) {
        std::fprintf(stderr, "usage: gpu_activity pci | gpu_activity spin|gemm|copy SECONDS\n");
        return 2;
    }
    const double seconds = std::atof(argv[2]);
    if (std::strcmp(argv[1], "spin") == 0) return Spin(seconds);
    if (std::strcmp(argv[1], "gemm") == 0) return Gemm(seconds);
    if (std::strcmp(argv[1], "copy") == 0) return Copy(seconds);
    std::fprintf(stderr, "gpu_activity: unknown load %s\n", argv[1]);
    return 2;
}
