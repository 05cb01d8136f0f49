// The NCCL all-reduce check: one process, one communicator per device (ncclCommInitAll), an
// out-of-place sum of a known pattern timed over several iterations and then verified on every
// device. NCCL is opened with dlopen on first use; without nccl.h at build time the check says
// it was built without NCCL.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "checks_internal.h"
#include "cuda_util.cuh"

#if AUTOHEAL_HAVE_NCCL
#include <nccl.h>

#include <mutex>

#include "dynlib.h"
#endif

namespace autoheal::cuda {

#if !AUTOHEAL_HAVE_NCCL

Status RunNcclAllreduce(int, const AllreduceParams&, Fields*) {
    return Status::Error("built without NCCL");
}

#else

namespace {

struct Nccl {
    decltype(&ncclCommInitAll) comm_init_all = nullptr;
    decltype(&ncclCommDestroy) comm_destroy = nullptr;
    decltype(&ncclAllReduce) all_reduce = nullptr;
    decltype(&ncclGroupStart) group_start = nullptr;
    decltype(&ncclGroupEnd) group_end = nullptr;
    decltype(&ncclGetErrorString) error_string = nullptr;
    std::string error;  // why it could not be loaded; empty when loaded
};

const Nccl& LoadNccl() {
    static Nccl nccl;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string error;
        void* lib = OpenFirstLibrary({"libnccl.so.2"}, &error);
        if (lib == nullptr) {
            nccl.error = "nccl is not available: " + error;
            return;
        }
        std::string missing;
        LoadSymbol(lib, "ncclCommInitAll", &nccl.comm_init_all, &missing);
        LoadSymbol(lib, "ncclCommDestroy", &nccl.comm_destroy, &missing);
        LoadSymbol(lib, "ncclAllReduce", &nccl.all_reduce, &missing);
        LoadSymbol(lib, "ncclGroupStart", &nccl.group_start, &missing);
        LoadSymbol(lib, "ncclGroupEnd", &nccl.group_end, &missing);
        LoadSymbol(lib, "ncclGetErrorString", &nccl.error_string, &missing);
        if (!missing.empty()) nccl.error = "nccl lacks: " + missing;
    });
    return nccl;
}

const char* NcclResultName(ncclResult_t result) {
    switch (result) {
        case ncclUnhandledCudaError:
            return "ncclUnhandledCudaError";
        case ncclSystemError:
            return "ncclSystemError";
        case ncclInternalError:
            return "ncclInternalError";
        case ncclInvalidArgument:
            return "ncclInvalidArgument";
        case ncclInvalidUsage:
            return "ncclInvalidUsage";
        case ncclRemoteError:
            return "ncclRemoteError";
        default:
            return "ncclError";
    }
}

#define AH_NCCL(nccl, call, expr)                                                                \
    do {                                                                                         \
        ncclResult_t ah_nccl_result_ = (expr);                                                   \
        if (ah_nccl_result_ != ncclSuccess)                                                      \
            return Status{(nccl).error_string(ah_nccl_result_), NcclResultName(ah_nccl_result_), \
                          call};                                                                 \
    } while (0)

// Rank r's element i is (i mod 13 + 1) * (r + 1), so the sum over R ranks is
// (i mod 13 + 1) * R (R + 1) / 2: small integers, exact in fp32 in any summation order.
__global__ void FillRank(float* data, std::int64_t count, int rank) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < count; i += stride) {
        data[i] = static_cast<float>((i % 13 + 1) * (rank + 1));
    }
}

__global__ void VerifySum(const float* data, std::int64_t count, int ranks,
                          unsigned long long* mismatches) {
    unsigned long long bad = 0;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const std::int64_t rank_sum = static_cast<std::int64_t>(ranks) * (ranks + 1) / 2;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < count; i += stride) {
        if (data[i] != static_cast<float>((i % 13 + 1) * rank_sum)) ++bad;
    }
    bad = WarpSum(bad);
    if ((threadIdx.x & 31) == 0 && bad != 0) atomicAdd(mismatches, bad);
}

// One rank's buffers and stream, on its own device.
struct Rank {
    int device = 0;
    DeviceMemory send;
    DeviceMemory recv;
    DeviceMemory mismatches;
    Stream stream;
};

// Destroys the communicators (before the ranks' buffers and streams go).
struct Communicators {
    const Nccl& nccl;
    std::vector<ncclComm_t> comms;
    ~Communicators() {
        for (ncclComm_t comm : comms) {
            if (comm != nullptr) nccl.comm_destroy(comm);
        }
    }
};

}  // namespace

Status RunNcclAllreduce(int device, const AllreduceParams& params, Fields* out) {
    const Nccl& nccl = LoadNccl();
    if (!nccl.error.empty()) return Status::Error(nccl.error);
    int count = 0;
    AH_CUDA(cudaGetDeviceCount(&count));
    std::vector<int> devices = params.devices;
    if (devices.empty()) {
        for (int d = 0; d < count; ++d) devices.push_back(d);
    }
    for (std::size_t i = 0; i < devices.size(); ++i) {
        if (devices[i] < 0 || devices[i] >= count) {
            return CudaError(cudaErrorInvalidDevice, "ncclCommInitAll");
        }
        if (std::count(devices.begin(), devices.end(), devices[i]) > 1) {
            return Status::Error("devices lists device " + std::to_string(devices[i]) + " twice");
        }
    }
    if (devices.empty()) return CudaError(cudaErrorNoDevice, "cudaGetDeviceCount");
    const auto ranks = static_cast<int>(devices.size());
    const std::int64_t elements = params.bytes / static_cast<std::int64_t>(sizeof(float));
    const std::size_t bytes = static_cast<std::size_t>(elements) * sizeof(float);

    std::vector<Rank> rank(ranks);
    for (int r = 0; r < ranks; ++r) {
        Rank& k = rank[r];
        k.device = devices[r];
        AH_CUDA(cudaSetDevice(k.device));
        int sms = 0;
        AH_TRY(MultiprocessorCount(k.device, &sms));
        AH_TRY(k.stream.Create(k.device));
        AH_TRY(k.send.Allocate(k.device, bytes));
        AH_TRY(k.recv.Allocate(k.device, bytes));
        AH_TRY(k.mismatches.Allocate(k.device, sizeof(unsigned long long)));
        AH_CUDA(cudaMemsetAsync(k.mismatches.get(), 0, sizeof(unsigned long long), k.stream.get()));
        FillRank<<<StreamBlocks(sms), kStreamThreads, 0, k.stream.get()>>>(k.send.As<float>(),
                                                                           elements, r);
        AH_CUDA_LAUNCH("FillRank");
        AH_CUDA(cudaStreamSynchronize(k.stream.get()));
    }

    Communicators communicators{nccl, std::vector<ncclComm_t>(ranks, nullptr)};
    AH_NCCL(nccl, "ncclCommInitAll",
            nccl.comm_init_all(communicators.comms.data(), ranks, devices.data()));
    auto all_reduce = [&]() -> Status {
        AH_NCCL(nccl, "ncclGroupStart", nccl.group_start());
        for (int r = 0; r < ranks; ++r) {
            ncclResult_t result = nccl.all_reduce(
                rank[r].send.get(), rank[r].recv.get(), static_cast<std::size_t>(elements),
                ncclFloat, ncclSum, communicators.comms[r], rank[r].stream.get());
            if (result != ncclSuccess) {
                nccl.group_end();
                return Status{nccl.error_string(result), NcclResultName(result), "ncclAllReduce"};
            }
        }
        AH_NCCL(nccl, "ncclGroupEnd", nccl.group_end());
        return Status::Ok();
    };
    auto synchronize = [&]() -> Status {
        for (int r = 0; r < ranks; ++r) {
            AH_CUDA(cudaSetDevice(rank[r].device));
            AH_CUDA(cudaStreamSynchronize(rank[r].stream.get()));
        }
        return Status::Ok();
    };

    AH_TRY(all_reduce());  // warm-up: connects the channels
    AH_TRY(synchronize());
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < params.iterations; ++i) AH_TRY(all_reduce());
    AH_TRY(synchronize());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    unsigned long long mismatches = 0;
    for (int r = 0; r < ranks; ++r) {
        Rank& k = rank[r];
        AH_CUDA(cudaSetDevice(k.device));
        int sms = 0;
        AH_TRY(MultiprocessorCount(k.device, &sms));
        VerifySum<<<StreamBlocks(sms), kStreamThreads, 0, k.stream.get()>>>(
            k.recv.As<float>(), elements, ranks, k.mismatches.As<unsigned long long>());
        AH_CUDA_LAUNCH("VerifySum");
        unsigned long long bad = 0;
        AH_CUDA(cudaMemcpyAsync(&bad, k.mismatches.get(), sizeof bad, cudaMemcpyDeviceToHost,
                                k.stream.get()));
        AH_CUDA(cudaStreamSynchronize(k.stream.get()));
        mismatches += bad;
    }
    AH_CUDA(cudaSetDevice(device));

    // nccl-tests' definitions: algorithm bandwidth is bytes over time per operation; bus
    // bandwidth scales it by 2 (R - 1) / R, what each link carries in a ring.
    const double per_op = seconds / static_cast<double>(params.iterations);
    const double algbw = per_op > 0 ? static_cast<double>(bytes) / per_op / 1e9 : 0.0;
    out->emplace_back("ranks", std::int64_t{ranks});
    out->emplace_back("bytes", static_cast<std::int64_t>(bytes));
    out->emplace_back("iterations", params.iterations);
    out->emplace_back("algbw_gbps", algbw);
    out->emplace_back("busbw_gbps", algbw * 2.0 * (ranks - 1) / ranks);
    out->emplace_back("mismatches", static_cast<std::int64_t>(mismatches));
    out->emplace_back("correct", mismatches == 0);
    return Status::Ok();
}

#endif  // AUTOHEAL_HAVE_NCCL

}  // namespace autoheal::cuda
