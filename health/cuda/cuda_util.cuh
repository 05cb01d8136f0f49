// Helpers shared by the check implementations: CUDA errors as Status values and owners that
// release device resources on every path (a check that fails half-way must not leak GPU memory
// into the next check of the same process).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "checks_internal.h"

namespace autoheal::cuda {

// `expr` is the call's source text; the error names only the function ("cudaMalloc").
inline Status CudaError(cudaError_t error, const char* expr) {
    std::string call(expr);
    if (auto paren = call.find('('); paren != std::string::npos) call.resize(paren);
    return {cudaGetErrorString(error), cudaGetErrorName(error), std::move(call)};
}

#define AH_CUDA(expr)                                                               \
    do {                                                                            \
        cudaError_t ah_cuda_error_ = (expr);                                        \
        if (ah_cuda_error_ != cudaSuccess) return CudaError(ah_cuda_error_, #expr); \
    } while (0)

// After a kernel launch: launch errors now, execution errors at the next synchronizing call.
#define AH_CUDA_LAUNCH(kernel_name)                                                       \
    do {                                                                                  \
        cudaError_t ah_cuda_error_ = cudaGetLastError();                                  \
        if (ah_cuda_error_ != cudaSuccess) return CudaError(ah_cuda_error_, kernel_name); \
    } while (0)

// Makes `device` current for a scope and restores the previous device afterwards.
class ScopedDevice {
  public:
    explicit ScopedDevice(int device) {
        if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
        if (device != previous_) cudaSetDevice(device);
    }
    ~ScopedDevice() {
        if (previous_ >= 0) cudaSetDevice(previous_);
    }
    ScopedDevice(const ScopedDevice&) = delete;
    ScopedDevice& operator=(const ScopedDevice&) = delete;

  private:
    int previous_ = -1;
};

// Device memory on one device.
class DeviceMemory {
  public:
    DeviceMemory() = default;
    ~DeviceMemory() { Release(); }
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;
    DeviceMemory(DeviceMemory&& other) noexcept
        : ptr_(std::exchange(other.ptr_, nullptr)), device_(other.device_) {}

    // REQUIRES: `device` is the current device.
    Status Allocate(int device, std::size_t bytes) {
        Release();
        device_ = device;
        AH_CUDA(cudaMalloc(&ptr_, bytes));
        return Status::Ok();
    }
    template <class T>
    T* As() const {
        return static_cast<T*>(ptr_);
    }
    void* get() const { return ptr_; }

  private:
    void Release() {
        if (ptr_ == nullptr) return;
        ScopedDevice scope(device_);
        cudaFree(ptr_);
        ptr_ = nullptr;
    }
    void* ptr_ = nullptr;
    int device_ = 0;
};

// Page-locked host memory (what the DMA engines need for full-speed copies).
class PinnedMemory {
  public:
    PinnedMemory() = default;
    ~PinnedMemory() {
        if (ptr_ != nullptr) cudaFreeHost(ptr_);
    }
    PinnedMemory(const PinnedMemory&) = delete;
    PinnedMemory& operator=(const PinnedMemory&) = delete;

    Status Allocate(std::size_t bytes) {
        AH_CUDA(cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault));
        return Status::Ok();
    }
    void* get() const { return ptr_; }

  private:
    void* ptr_ = nullptr;
};

class Stream {
  public:
    Stream() = default;
    ~Stream() {
        if (stream_ == nullptr) return;
        ScopedDevice scope(device_);
        cudaStreamDestroy(stream_);
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&& other) noexcept
        : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_) {}

    // REQUIRES: `device` is the current device.
    Status Create(int device) {
        device_ = device;
        AH_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        return Status::Ok();
    }
    cudaStream_t get() const { return stream_; }

  private:
    cudaStream_t stream_ = nullptr;
    int device_ = 0;
};

// A pair of events that times work on one stream.
class EventTimer {
  public:
    EventTimer() = default;
    ~EventTimer() {
        if (start_ != nullptr) cudaEventDestroy(start_);
        if (stop_ != nullptr) cudaEventDestroy(stop_);
    }
    EventTimer(const EventTimer&) = delete;
    EventTimer& operator=(const EventTimer&) = delete;

    // REQUIRES: the stream's device is the current device.
    Status Create() {
        AH_CUDA(cudaEventCreate(&start_));
        AH_CUDA(cudaEventCreate(&stop_));
        return Status::Ok();
    }
    Status Start(cudaStream_t stream) {
        AH_CUDA(cudaEventRecord(start_, stream));
        return Status::Ok();
    }
    Status Stop(cudaStream_t stream) {
        AH_CUDA(cudaEventRecord(stop_, stream));
        return Status::Ok();
    }
    // Waits for the stop event; *seconds is the time between the two events.
    Status Seconds(double* seconds) {
        AH_CUDA(cudaEventSynchronize(stop_));
        float ms = 0;
        AH_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
        *seconds = ms / 1000.0;
        return Status::Ok();
    }

  private:
    cudaEvent_t start_ = nullptr;
    cudaEvent_t stop_ = nullptr;
};

inline Status MultiprocessorCount(int device, int* count) {
    AH_CUDA(cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device));
    return Status::Ok();
}

// A grid for memory-bound grid-stride kernels: enough resident blocks to fill every SM.
constexpr int kStreamThreads = 512;
inline unsigned StreamBlocks(int multiprocessors) {
    return static_cast<unsigned>(multiprocessors > 0 ? multiprocessors * 4 : 512);
}

__device__ __forceinline__ std::uint64_t Mix64(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

// Warp sums and maxima; every lane gets the result.
__device__ __forceinline__ unsigned long long WarpSum(unsigned long long v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}
__device__ __forceinline__ unsigned long long WarpMin(unsigned long long v) {
    for (int offset = 16; offset > 0; offset /= 2) {
        unsigned long long other = __shfl_xor_sync(0xffffffffu, v, offset);
        v = other < v ? other : v;
    }
    return v;
}
__device__ __forceinline__ unsigned WarpMax(unsigned v) {
    for (int offset = 16; offset > 0; offset /= 2)
        v = max(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

}  // namespace autoheal::cuda
