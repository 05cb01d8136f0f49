// The memory checks: HBM patterns and the copy bandwidths (device to device, host to device and
// back, peer to peer). GEMM is in gemm.cu, the NCCL all-reduce in nccl_allreduce.cu.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "checks_internal.h"
#include "cuda_util.cuh"

namespace autoheal::cuda {
namespace {

constexpr std::int64_t kMiB = 1LL << 20;
constexpr std::int64_t kGiB = 1LL << 30;

// --- HBM ---------------------------------------------------------------------------------------
// The tested region is at least this large, so that most of it is read back from DRAM rather
// than from L2 (50 MB on an H100); the stores and loads are also marked evict-first.
constexpr std::int64_t kHbmMinBytes = 256 * kMiB;
// At most this much, so the check stays well under 2 s on an H100 (8 passes of 64 GiB at
// ~3 TB/s take ~0.2 s; allocating and the first touch cost more than the passes).
constexpr std::int64_t kHbmMaxBytes = 64 * kGiB;
// Left free for the CUDA context, cuBLAS and the driver.
constexpr std::int64_t kHbmReserveBytes = 512 * kMiB;

enum HbmPattern : int { kWalkingOnes = 0, kAddress = 1, kAddressInverted = 2, kRandom = 3 };
constexpr const char* kHbmPatternNames[] = {"walking_ones", "address", "address_inverted",
                                            "random"};

// The value word `w` holds under a pattern. `base` is the buffer's device address, so the
// address patterns catch address-line faults (two addresses that alias one cell).
template <int kPattern>
__device__ __forceinline__ std::uint64_t PatternWord(std::uint64_t w, std::uint64_t base,
                                                     std::uint64_t seed) {
    if constexpr (kPattern == kWalkingOnes) {
        return 1ULL << (w & 63);
    } else if constexpr (kPattern == kAddress) {
        return base + w * 8;
    } else if constexpr (kPattern == kAddressInverted) {
        return ~(base + w * 8);
    } else {
        // Cheap 32-bit mixing: the passes must stay memory-bound.
        std::uint32_t x = static_cast<std::uint32_t>(w) * 0x9e3779b1u ^
                          static_cast<std::uint32_t>(seed) ^ static_cast<std::uint32_t>(w >> 32);
        x ^= x >> 15;
        x *= 0x2c1b3c6du;
        x ^= x >> 12;
        std::uint32_t y = (x ^ static_cast<std::uint32_t>(seed >> 32)) * 0x297a2d39u;
        y ^= y >> 15;
        return (static_cast<std::uint64_t>(x) << 32) | y;
    }
}

struct HbmCounters {
    unsigned long long bad_words;
    unsigned long long bad_bits;
    unsigned long long first_bad_word;
};

template <int kPattern>
__global__ void HbmWrite(ulonglong2* words, std::uint64_t pairs, std::uint64_t base,
                         std::uint64_t seed) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < pairs; i += stride) {
        ulonglong2 v;
        v.x = PatternWord<kPattern>(2 * i, base, seed);
        v.y = PatternWord<kPattern>(2 * i + 1, base, seed);
        __stcs(&words[i], v);
    }
}

template <int kPattern>
__global__ void HbmVerify(const ulonglong2* words, std::uint64_t pairs, std::uint64_t base,
                          std::uint64_t seed, HbmCounters* counters) {
    unsigned long long bad = 0;
    unsigned long long bits = 0;
    unsigned long long first = ~0ULL;
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < pairs; i += stride) {
        ulonglong2 v = __ldcs(&words[i]);
        std::uint64_t e0 = PatternWord<kPattern>(2 * i, base, seed);
        std::uint64_t e1 = PatternWord<kPattern>(2 * i + 1, base, seed);
        if (v.x != e0) {
            ++bad;
            bits += __popcll(v.x ^ e0);
            first = min(first, static_cast<unsigned long long>(2 * i));
        }
        if (v.y != e1) {
            ++bad;
            bits += __popcll(v.y ^ e1);
            first = min(first, static_cast<unsigned long long>(2 * i + 1));
        }
    }
    bad = WarpSum(bad);
    bits = WarpSum(bits);
    first = WarpMin(first);
    if ((threadIdx.x & 31) == 0 && bad != 0) {
        atomicAdd(&counters->bad_words, bad);
        atomicAdd(&counters->bad_bits, bits);
        atomicMin(&counters->first_bad_word, first);
    }
}

template <int kPattern>
Status HbmPass(ulonglong2* words, std::uint64_t pairs, std::uint64_t seed, unsigned blocks,
               cudaStream_t stream, HbmCounters* counters, double* seconds) {
    const auto base = reinterpret_cast<std::uint64_t>(words);
    EventTimer write_timer;
    EventTimer verify_timer;
    AH_TRY(write_timer.Create());
    AH_TRY(verify_timer.Create());
    AH_TRY(write_timer.Start(stream));
    HbmWrite<kPattern><<<blocks, kStreamThreads, 0, stream>>>(words, pairs, base, seed);
    AH_CUDA_LAUNCH("HbmWrite");
    AH_TRY(write_timer.Stop(stream));
    AH_TRY(verify_timer.Start(stream));
    HbmVerify<kPattern><<<blocks, kStreamThreads, 0, stream>>>(words, pairs, base, seed, counters);
    AH_CUDA_LAUNCH("HbmVerify");
    AH_TRY(verify_timer.Stop(stream));
    double write_seconds = 0;
    double verify_seconds = 0;
    AH_TRY(write_timer.Seconds(&write_seconds));
    AH_TRY(verify_timer.Seconds(&verify_seconds));
    *seconds += write_seconds + verify_seconds;
    return Status::Ok();
}

// Copies `bytes` `iterations` times with `copy` (after one untimed warm-up) and returns the
// seconds the timed copies took.
template <class Copy>
Status TimeCopies(cudaStream_t stream, std::int64_t iterations, Copy copy, double* seconds) {
    AH_CUDA(copy());
    AH_CUDA(cudaStreamSynchronize(stream));
    EventTimer timer;
    AH_TRY(timer.Create());
    AH_TRY(timer.Start(stream));
    for (std::int64_t i = 0; i < iterations; ++i) AH_CUDA(copy());
    AH_TRY(timer.Stop(stream));
    AH_TRY(timer.Seconds(seconds));
    if (*seconds <= 0) return Status::Error("the copies took no measurable time");
    return Status::Ok();
}

double Gbps(double bytes, double seconds) { return bytes / seconds / 1e9; }

}  // namespace

Status DeviceCount(int* count) {
    cudaError_t error = cudaGetDeviceCount(count);
    if (error == cudaErrorNoDevice) {
        cudaGetLastError();
        *count = 0;
        return Status::Ok();
    }
    if (error != cudaSuccess) return CudaError(error, "cudaGetDeviceCount");
    return Status::Ok();
}

Status DeviceIdentity(int device, Fields* out) {
    cudaDeviceProp prop{};
    AH_CUDA(cudaGetDeviceProperties(&prop, device));
    char bus_id[32] = {};
    AH_CUDA(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
    // The NVML form, so results can be matched to NVML's GPUs whatever CUDA_DEVICE_ORDER is.
    const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
    char uuid[64];
    std::snprintf(uuid, sizeof uuid,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    out->emplace_back("device", std::int64_t{device});
    out->emplace_back("name", std::string(prop.name));
    out->emplace_back("pci_bus_id", std::string(bus_id));
    out->emplace_back("uuid", std::string(uuid));
    return Status::Ok();
}

Status RunHbm(int device, const HbmParams& params, Fields* out) {
    AH_CUDA(cudaSetDevice(device));
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    AH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    const auto free = static_cast<std::int64_t>(free_bytes);
    if (free < kHbmMinBytes + kHbmReserveBytes) {
        return Status::Error("not enough free device memory to test: free_bytes=" +
                             std::to_string(free));
    }
    auto bytes = static_cast<std::int64_t>(params.fraction * static_cast<double>(free));
    bytes = std::clamp(bytes, kHbmMinBytes, std::min(kHbmMaxBytes, free - kHbmReserveBytes));
    bytes &= ~(2 * kMiB - 1);

    int sms = 0;
    AH_TRY(MultiprocessorCount(device, &sms));
    Stream stream;
    AH_TRY(stream.Create(device));
    DeviceMemory buffer;
    DeviceMemory counters;
    AH_TRY(buffer.Allocate(device, static_cast<std::size_t>(bytes)));
    AH_TRY(counters.Allocate(device, sizeof(HbmCounters)));
    HbmCounters initial{0, 0, ~0ULL};
    AH_CUDA(cudaMemcpyAsync(counters.get(), &initial, sizeof initial, cudaMemcpyHostToDevice,
                            stream.get()));

    auto* words = buffer.As<ulonglong2>();
    const auto pairs = static_cast<std::uint64_t>(bytes) / sizeof(ulonglong2);
    const unsigned blocks = StreamBlocks(sms);
    auto* c = counters.As<HbmCounters>();
    double seconds = 0;
    AH_TRY(HbmPass<kWalkingOnes>(words, pairs, params.seed, blocks, stream.get(), c, &seconds));
    AH_TRY(HbmPass<kAddress>(words, pairs, params.seed, blocks, stream.get(), c, &seconds));
    AH_TRY(HbmPass<kAddressInverted>(words, pairs, params.seed, blocks, stream.get(), c, &seconds));
    AH_TRY(HbmPass<kRandom>(words, pairs, params.seed, blocks, stream.get(), c, &seconds));

    HbmCounters result{};
    AH_CUDA(cudaMemcpyAsync(&result, counters.get(), sizeof result, cudaMemcpyDeviceToHost,
                            stream.get()));
    AH_CUDA(cudaStreamSynchronize(stream.get()));

    constexpr int kPasses = 2 * static_cast<int>(std::size(kHbmPatternNames));
    std::string patterns;
    for (const char* name : kHbmPatternNames)
        patterns += (patterns.empty() ? "" : ",") + std::string(name);
    out->emplace_back("bytes_tested", bytes);
    out->emplace_back("errors", static_cast<std::int64_t>(result.bad_words));
    out->emplace_back("bit_errors", static_cast<std::int64_t>(result.bad_bits));
    if (result.bad_words != 0) {
        out->emplace_back("first_error_offset",
                          static_cast<std::int64_t>(result.first_bad_word * 8));
    }
    // Every byte written and read back, over the kernels' time.
    out->emplace_back("gbps",
                      seconds > 0 ? Gbps(static_cast<double>(bytes) * kPasses, seconds) : 0.0);
    out->emplace_back("patterns", patterns);
    return Status::Ok();
}

Status RunD2dBandwidth(int device, const CopyParams& params, Fields* out) {
    const std::int64_t bytes = params.bytes > 0 ? params.bytes : kGiB;
    AH_CUDA(cudaSetDevice(device));
    Stream stream;
    AH_TRY(stream.Create(device));
    DeviceMemory src;
    DeviceMemory dst;
    AH_TRY(src.Allocate(device, static_cast<std::size_t>(bytes)));
    AH_TRY(dst.Allocate(device, static_cast<std::size_t>(bytes)));
    AH_CUDA(cudaMemsetAsync(src.get(), 0x5a, static_cast<std::size_t>(bytes), stream.get()));
    double seconds = 0;
    AH_TRY(TimeCopies(
        stream.get(), params.iterations,
        [&] {
            return cudaMemcpyAsync(dst.get(), src.get(), static_cast<std::size_t>(bytes),
                                   cudaMemcpyDeviceToDevice, stream.get());
        },
        &seconds));
    out->emplace_back("bytes", bytes);
    out->emplace_back("iterations", params.iterations);
    // Read plus written, as CUDA's bandwidthTest counts device-to-device copies.
    out->emplace_back("gbps", Gbps(2.0 * static_cast<double>(bytes) * params.iterations, seconds));
    return Status::Ok();
}

Status RunHostBandwidth(int device, bool to_device, const CopyParams& params, Fields* out) {
    const std::int64_t bytes = params.bytes > 0 ? params.bytes : 256 * kMiB;
    AH_CUDA(cudaSetDevice(device));
    Stream stream;
    AH_TRY(stream.Create(device));
    DeviceMemory device_buffer;
    PinnedMemory host_buffer;
    AH_TRY(device_buffer.Allocate(device, static_cast<std::size_t>(bytes)));
    AH_TRY(host_buffer.Allocate(static_cast<std::size_t>(bytes)));
    std::memset(host_buffer.get(), 0x5a, static_cast<std::size_t>(bytes));
    AH_CUDA(
        cudaMemsetAsync(device_buffer.get(), 0xa5, static_cast<std::size_t>(bytes), stream.get()));
    double seconds = 0;
    AH_TRY(TimeCopies(
        stream.get(), params.iterations,
        [&] {
            return to_device ? cudaMemcpyAsync(device_buffer.get(), host_buffer.get(),
                                               static_cast<std::size_t>(bytes),
                                               cudaMemcpyHostToDevice, stream.get())
                             : cudaMemcpyAsync(host_buffer.get(), device_buffer.get(),
                                               static_cast<std::size_t>(bytes),
                                               cudaMemcpyDeviceToHost, stream.get());
        },
        &seconds));
    out->emplace_back("bytes", bytes);
    out->emplace_back("iterations", params.iterations);
    out->emplace_back("gbps", Gbps(static_cast<double>(bytes) * params.iterations, seconds));
    return Status::Ok();
}

Status RunP2pBandwidth(int device, const CopyParams& params, Fields* out) {
    const std::int64_t bytes = params.bytes > 0 ? params.bytes : 256 * kMiB;
    int count = 0;
    AH_CUDA(cudaGetDeviceCount(&count));
    const int peer = params.peer >= 0 ? params.peer : (count > 1 ? (device + 1) % count : -1);
    if (peer < 0 || count < 2) {
        out->emplace_back("supported", false);
        out->emplace_back("reason", std::string("only one device is visible"));
        return Status::Ok();
    }
    if (peer == device) return Status::Error("peer must differ from device");
    if (peer >= count) return CudaError(cudaErrorInvalidDevice, "cudaDeviceCanAccessPeer");
    out->emplace_back("peer", std::int64_t{peer});
    int forward = 0;
    int backward = 0;
    AH_CUDA(cudaDeviceCanAccessPeer(&forward, device, peer));
    AH_CUDA(cudaDeviceCanAccessPeer(&backward, peer, device));
    if (forward == 0 || backward == 0) {
        out->emplace_back("supported", false);
        out->emplace_back("reason", std::string("cudaDeviceCanAccessPeer says no"));
        return Status::Ok();
    }

    // Peer access is enabled for the copy and disabled again, so the process is left as found
    // (an already enabled mapping is left alone).
    struct PeerAccess {
        int from;
        int to;
        bool enabled = false;
        ~PeerAccess() {
            if (!enabled) return;
            ScopedDevice scope(from);
            cudaDeviceDisablePeerAccess(to);
        }
        Status Enable() {
            ScopedDevice scope(from);
            cudaError_t error = cudaDeviceEnablePeerAccess(to, 0);
            if (error == cudaErrorPeerAccessAlreadyEnabled) {
                cudaGetLastError();  // clears the non-sticky error
                return Status::Ok();
            }
            if (error != cudaSuccess) return CudaError(error, "cudaDeviceEnablePeerAccess");
            enabled = true;
            return Status::Ok();
        }
    };
    PeerAccess there{device, peer};
    PeerAccess back{peer, device};
    AH_TRY(there.Enable());
    AH_TRY(back.Enable());

    DeviceMemory dst;
    {
        ScopedDevice scope(peer);
        AH_TRY(dst.Allocate(peer, static_cast<std::size_t>(bytes)));
    }
    AH_CUDA(cudaSetDevice(device));
    Stream stream;
    DeviceMemory src;
    AH_TRY(stream.Create(device));
    AH_TRY(src.Allocate(device, static_cast<std::size_t>(bytes)));
    AH_CUDA(cudaMemsetAsync(src.get(), 0x5a, static_cast<std::size_t>(bytes), stream.get()));
    double seconds = 0;
    AH_TRY(TimeCopies(
        stream.get(), params.iterations,
        [&] {
            return cudaMemcpyPeerAsync(dst.get(), peer, src.get(), device,
                                       static_cast<std::size_t>(bytes), stream.get());
        },
        &seconds));
    out->emplace_back("supported", true);
    out->emplace_back("bytes", bytes);
    out->emplace_back("iterations", params.iterations);
    out->emplace_back("gbps", Gbps(static_cast<double>(bytes) * params.iterations, seconds));
    return Status::Ok();
}

}  // namespace autoheal::cuda
