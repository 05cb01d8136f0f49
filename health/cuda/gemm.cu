// The GEMM check: cuBLASLt (opened with dlopen) multiplies two matrices whose product is known
// exactly, every element of C is compared with the known answer on the device, and C is hashed
// so that healthy GPUs can be compared with each other.
//
// The known answer: A and B hold only -1, 0 and 1, in a pattern that repeats every kPeriod rows
// and columns, so C[i][j] = sum_r count(r) * a(i mod P, r) * b(r, j mod P) is a P x P table the
// host computes in microseconds. Every partial sum is an integer of magnitude <= n, exact in the
// fp32 accumulator whatever order cuBLAS adds in (split-K included), and C is written in fp32,
// so a healthy GPU's C is bit-identical to the table: any difference is a fault, not rounding.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "checks_internal.h"
#include "cuda_util.cuh"
#include "dynlib.h"

namespace autoheal::cuda {
namespace {

constexpr int kPeriod = 61;  // prime, so the pattern does not line up with tile sizes
constexpr std::size_t kWorkspaceBytes = 32u << 20;
constexpr int kWarmups = 2;

__host__ __device__ inline std::uint32_t Hash32(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
// Elements of A (row p, column r of the period) and B (row r, column q), in {-1, 0, 1}.
__host__ __device__ inline int PatternA(int p, int r) {
    return static_cast<int>(Hash32(static_cast<std::uint32_t>(p * kPeriod + r) + 0x3c6ef372u) % 3) -
           1;
}
__host__ __device__ inline int PatternB(int r, int q) {
    return static_cast<int>(Hash32(static_cast<std::uint32_t>(r * kPeriod + q) + 0xa54ff53au) % 3) -
           1;
}

template <class T>
__device__ inline T FromInt(int v);
template <>
__device__ inline float FromInt<float>(int v) {
    return static_cast<float>(v);
}
template <>
__device__ inline __nv_bfloat16 FromInt<__nv_bfloat16>(int v) {
    return __int2bfloat16_rn(v);
}

// Fills an n x n column-major matrix whose fast index is k (the reduction index): A is stored
// as A^T (cuBLASLt's "TN" layout: op(A) = A^T), B as is.
template <class T>
__global__ void FillOperand(T* m, std::int64_t n, bool is_a) {
    const std::int64_t total = n * n;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         idx < total; idx += stride) {
        const int k = static_cast<int>(idx % n % kPeriod);
        const int x = static_cast<int>(idx / n % kPeriod);  // row i of A or column j of B
        m[idx] = FromInt<T>(is_a ? PatternA(x, k) : PatternB(k, x));
    }
}

struct GemmCounters {
    unsigned long long mismatches;
    unsigned long long hash;
    unsigned max_rel_error_bits;  // a non-negative float's bits order like the float
};

// Compares C (column-major, n x n) with the table and sums a per-element hash (order does not
// matter, so the checksum is the same however the work is split).
__global__ void VerifyC(const float* c, std::int64_t n, const float* table,
                        GemmCounters* counters) {
    unsigned long long mismatches = 0;
    unsigned long long hash = 0;
    float max_error = 0;
    const std::int64_t total = n * n;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         idx < total; idx += stride) {
        const float v = c[idx];
        const int i = static_cast<int>(idx % n % kPeriod);
        const int j = static_cast<int>(idx / n % kPeriod);
        const float expected = table[i * kPeriod + j];
        if (v != expected) {
            ++mismatches;
            float error = fabsf(v - expected) / fmaxf(fabsf(expected), 1.0f);
            max_error = fmaxf(max_error, isnan(error) ? INFINITY : error);
        }
        const std::uint32_t bits = v == 0.0f ? 0u : __float_as_uint(v);  // -0 hashes as +0
        hash += Mix64((static_cast<std::uint64_t>(idx) << 32) | bits);
    }
    mismatches = WarpSum(mismatches);
    hash = WarpSum(hash);
    const unsigned error_bits = WarpMax(__float_as_uint(max_error));
    if ((threadIdx.x & 31) == 0) {
        if (mismatches != 0) atomicAdd(&counters->mismatches, mismatches);
        atomicAdd(&counters->hash, hash);
        if (error_bits != 0) atomicMax(&counters->max_rel_error_bits, error_bits);
    }
}

std::vector<float> KnownAnswer(std::int64_t n) {
    std::vector<float> table(kPeriod * kPeriod);
    for (int p = 0; p < kPeriod; ++p) {
        for (int q = 0; q < kPeriod; ++q) {
            std::int64_t sum = 0;
            for (int r = 0; r < kPeriod; ++r) {
                const std::int64_t count = n / kPeriod + (r < n % kPeriod ? 1 : 0);
                sum += count * PatternA(p, r) * PatternB(r, q);
            }
            table[p * kPeriod + q] = static_cast<float>(sum);
        }
    }
    return table;
}

// --- cuBLASLt, opened on first use ---------------------------------------------------------------
#define AH_STRINGIFY2(x) #x
#define AH_STRINGIFY(x) AH_STRINGIFY2(x)

struct CublasLt {
    decltype(&cublasLtCreate) create = nullptr;
    decltype(&cublasLtDestroy) destroy = nullptr;
    decltype(&cublasLtGetStatusString) status_string = nullptr;
    decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
    decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
    decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
    decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
    decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
    decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
    decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
    decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
    decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
    decltype(&cublasLtMatmul) matmul = nullptr;
    std::string error;  // why it could not be loaded; empty when loaded
};

// Loaded once per process; the library stays loaded (unloading cuBLAS is not safe while the
// CUDA context lives).
const CublasLt& LoadCublasLt() {
    static CublasLt lt;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string error;
        void* lib = OpenFirstLibrary({"libcublasLt.so." AH_STRINGIFY(CUBLAS_VER_MAJOR)}, &error);
        if (lib == nullptr) {
            lt.error = "cublasLt is not available: " + error;
            return;
        }
        std::string missing;
        LoadSymbol(lib, "cublasLtCreate", &lt.create, &missing);
        LoadSymbol(lib, "cublasLtDestroy", &lt.destroy, &missing);
        LoadSymbol(lib, "cublasLtGetStatusString", &lt.status_string, &missing);
        LoadSymbol(lib, "cublasLtMatmulDescCreate", &lt.desc_create, &missing);
        LoadSymbol(lib, "cublasLtMatmulDescDestroy", &lt.desc_destroy, &missing);
        LoadSymbol(lib, "cublasLtMatmulDescSetAttribute", &lt.desc_set, &missing);
        LoadSymbol(lib, "cublasLtMatrixLayoutCreate", &lt.layout_create, &missing);
        LoadSymbol(lib, "cublasLtMatrixLayoutDestroy", &lt.layout_destroy, &missing);
        LoadSymbol(lib, "cublasLtMatmulPreferenceCreate", &lt.pref_create, &missing);
        LoadSymbol(lib, "cublasLtMatmulPreferenceDestroy", &lt.pref_destroy, &missing);
        LoadSymbol(lib, "cublasLtMatmulPreferenceSetAttribute", &lt.pref_set, &missing);
        LoadSymbol(lib, "cublasLtMatmulAlgoGetHeuristic", &lt.heuristic, &missing);
        LoadSymbol(lib, "cublasLtMatmul", &lt.matmul, &missing);
        if (!missing.empty()) lt.error = "cublasLt lacks: " + missing;
    });
    return lt;
}

// A cuBLAS failure; when the device itself has failed (an ECC error under the GEMM, say) the
// CUDA error says more than cuBLAS's EXECUTION_FAILED, so that is reported instead.
Status CublasError(const CublasLt& lt, cublasStatus_t status, const char* call) {
    cudaError_t device_error = cudaDeviceSynchronize();
    if (device_error != cudaSuccess) return CudaError(device_error, call);
    const char* text = lt.status_string(status);
    return {text, text, call};
}

#define AH_CUBLAS(lt, call, expr)                            \
    do {                                                     \
        cublasStatus_t ah_cublas_status_ = (expr);           \
        if (ah_cublas_status_ != CUBLAS_STATUS_SUCCESS)      \
            return CublasError(lt, ah_cublas_status_, call); \
    } while (0)

// Owns the cuBLASLt objects of one GEMM.
struct LtObjects {
    const CublasLt& lt;
    cublasLtHandle_t handle = nullptr;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr;
    cublasLtMatrixLayout_t b = nullptr;
    cublasLtMatrixLayout_t c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~LtObjects() {
        if (pref != nullptr) lt.pref_destroy(pref);
        if (c != nullptr) lt.layout_destroy(c);
        if (b != nullptr) lt.layout_destroy(b);
        if (a != nullptr) lt.layout_destroy(a);
        if (desc != nullptr) lt.desc_destroy(desc);
        if (handle != nullptr) lt.destroy(handle);
    }
};

}  // namespace

Status RunGemm(int device, const GemmParams& params, Fields* out) {
    const CublasLt& lt = LoadCublasLt();
    if (!lt.error.empty()) return Status::Error(lt.error);
    const std::int64_t n = params.n;
    const bool bf16 = params.dtype == "bf16";
    const cudaDataType_t operand_type = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t compute_type =
        params.dtype == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const std::size_t operand_bytes =
        static_cast<std::size_t>(n * n) * (bf16 ? sizeof(__nv_bfloat16) : sizeof(float));
    const std::size_t c_bytes = static_cast<std::size_t>(n * n) * sizeof(float);

    AH_CUDA(cudaSetDevice(device));
    int sms = 0;
    AH_TRY(MultiprocessorCount(device, &sms));
    const unsigned blocks = StreamBlocks(sms);
    Stream stream;
    AH_TRY(stream.Create(device));
    DeviceMemory a;
    DeviceMemory b;
    DeviceMemory c;
    DeviceMemory workspace;
    DeviceMemory table;
    DeviceMemory counters;
    AH_TRY(a.Allocate(device, operand_bytes));
    AH_TRY(b.Allocate(device, operand_bytes));
    AH_TRY(c.Allocate(device, c_bytes));
    AH_TRY(workspace.Allocate(device, kWorkspaceBytes));
    AH_TRY(table.Allocate(device, kPeriod * kPeriod * sizeof(float)));
    AH_TRY(counters.Allocate(device, 2 * sizeof(GemmCounters)));

    const std::vector<float> known = KnownAnswer(n);
    AH_CUDA(cudaMemcpyAsync(table.get(), known.data(), known.size() * sizeof(float),
                            cudaMemcpyHostToDevice, stream.get()));
    AH_CUDA(cudaMemsetAsync(counters.get(), 0, 2 * sizeof(GemmCounters), stream.get()));
    if (bf16) {
        FillOperand<<<blocks, kStreamThreads, 0, stream.get()>>>(a.As<__nv_bfloat16>(), n, true);
        FillOperand<<<blocks, kStreamThreads, 0, stream.get()>>>(b.As<__nv_bfloat16>(), n, false);
    } else {
        FillOperand<<<blocks, kStreamThreads, 0, stream.get()>>>(a.As<float>(), n, true);
        FillOperand<<<blocks, kStreamThreads, 0, stream.get()>>>(b.As<float>(), n, false);
    }
    AH_CUDA_LAUNCH("FillOperand");

    LtObjects objects{lt};
    AH_CUBLAS(lt, "cublasLtCreate", lt.create(&objects.handle));
    AH_CUBLAS(lt, "cublasLtMatmulDescCreate",
              lt.desc_create(&objects.desc, compute_type, CUDA_R_32F));
    const cublasOperation_t transpose = CUBLAS_OP_T;
    const cublasOperation_t no_transpose = CUBLAS_OP_N;
    AH_CUBLAS(lt, "cublasLtMatmulDescSetAttribute",
              lt.desc_set(objects.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
    AH_CUBLAS(
        lt, "cublasLtMatmulDescSetAttribute",
        lt.desc_set(objects.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_transpose, sizeof no_transpose));
    const auto rows = static_cast<std::uint64_t>(n);
    AH_CUBLAS(lt, "cublasLtMatrixLayoutCreate",
              lt.layout_create(&objects.a, operand_type, rows, rows, n));
    AH_CUBLAS(lt, "cublasLtMatrixLayoutCreate",
              lt.layout_create(&objects.b, operand_type, rows, rows, n));
    AH_CUBLAS(lt, "cublasLtMatrixLayoutCreate",
              lt.layout_create(&objects.c, CUDA_R_32F, rows, rows, n));
    AH_CUBLAS(lt, "cublasLtMatmulPreferenceCreate", lt.pref_create(&objects.pref));
    const std::uint64_t workspace_bytes = kWorkspaceBytes;
    AH_CUBLAS(lt, "cublasLtMatmulPreferenceSetAttribute",
              lt.pref_set(objects.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                          sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    AH_CUBLAS(lt, "cublasLtMatmulAlgoGetHeuristic",
              lt.heuristic(objects.handle, objects.desc, objects.a, objects.b, objects.c, objects.c,
                           objects.pref, 1, &heuristic, &found));
    if (found == 0) return Status::Error("cublasLt has no algorithm for this gemm");

    const float alpha = 1.0f;
    const float beta = 0.0f;
    auto matmul = [&] {
        return lt.matmul(objects.handle, objects.desc, &alpha, a.get(), objects.a, b.get(),
                         objects.b, &beta, c.get(), objects.c, c.get(), objects.c, &heuristic.algo,
                         workspace.get(), kWorkspaceBytes, stream.get());
    };
    auto* counter_pair = counters.As<GemmCounters>();

    // The first result is checked too: a fault that shows only when the GPU is cold (or only
    // once hot, in the last result) must not hide behind the other.
    for (int i = 0; i < kWarmups; ++i) AH_CUBLAS(lt, "cublasLtMatmul", matmul());
    VerifyC<<<blocks, kStreamThreads, 0, stream.get()>>>(c.As<float>(), n, table.As<float>(),
                                                         &counter_pair[0]);
    AH_CUDA_LAUNCH("VerifyC");
    EventTimer timer;
    AH_TRY(timer.Create());
    AH_TRY(timer.Start(stream.get()));
    for (std::int64_t i = 0; i < params.iterations; ++i) AH_CUBLAS(lt, "cublasLtMatmul", matmul());
    AH_TRY(timer.Stop(stream.get()));
    VerifyC<<<blocks, kStreamThreads, 0, stream.get()>>>(c.As<float>(), n, table.As<float>(),
                                                         &counter_pair[1]);
    AH_CUDA_LAUNCH("VerifyC");
    double seconds = 0;
    AH_TRY(timer.Seconds(&seconds));
    GemmCounters result[2] = {};
    AH_CUDA(cudaMemcpyAsync(result, counters.get(), sizeof result, cudaMemcpyDeviceToHost,
                            stream.get()));
    AH_CUDA(cudaStreamSynchronize(stream.get()));

    const unsigned long long mismatches = result[0].mismatches + result[1].mismatches;
    float max_error[2];
    std::memcpy(&max_error[0], &result[0].max_rel_error_bits, sizeof(float));
    std::memcpy(&max_error[1], &result[1].max_rel_error_bits, sizeof(float));
    char checksum[17];
    std::snprintf(checksum, sizeof checksum, "%016llx", result[1].hash);
    const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) *
                         static_cast<double>(n) * static_cast<double>(params.iterations);
    out->emplace_back("n", n);
    out->emplace_back("dtype", params.dtype);
    out->emplace_back("iterations", params.iterations);
    out->emplace_back("tflops", seconds > 0 ? flops / seconds / 1e12 : 0.0);
    out->emplace_back("checksum", std::string(checksum));
    out->emplace_back("max_rel_error", static_cast<double>(std::fmax(max_error[0], max_error[1])));
    out->emplace_back("mismatches", static_cast<std::int64_t>(mismatches));
    out->emplace_back("correct", mismatches == 0);
    return Status::Ok();
}

}  // namespace autoheal::cuda
