/* The C ABI of autoheal's CUDA check module (libautoheal_cuda_checks.so, built with nvcc for
 * sm_80 and sm_90, loaded with dlopen so autoheal runs where CUDA is absent). The fake module
 * for machines without GPUs (tests/fakes/fake_cuda) implements the same ABI.
 *
 * Each call runs one check on one device and writes one JSON object (NUL-terminated) into
 * `out`. Return 0 when the check ran (its verdict is in the JSON), a negative value when it
 * could not run (`out` then holds {"error": "..."}). Calls may block as long as the GPU does:
 * autoheal calls them in a child process with a deadline.
 *
 * Checks and their JSON results:
 *   "gemm"       params {"n": 8192, "dtype": "bf16"|"fp32", "iterations": 20}
 *                -> {"tflops": 712.3, "checksum": "9f2c...", "max_rel_error": 1e-3,
 *                    "correct": true, "seconds": 0.41}
 *                   correct: the result matches a known answer (inputs chosen so that C is
 *                   exactly known); checksum: a hash of C, equal on healthy GPUs of one model
 *                   (cross-GPU comparison catches silent data corruption).
 *   "hbm"        params {"fraction": 0.05}  (share of free memory to test)
 *                -> {"bytes_tested": 4294967296, "errors": 0, "gbps": 3100.0, "seconds": 0.2}
 *   "d2d_bw"     params {"bytes": 1073741824} -> {"gbps": 4300.0, "seconds": ...}
 *   "h2d_bw", "d2h_bw"  params {"bytes": 268435456} -> {"gbps": 55.0, "seconds": ...}
 *   "p2p_bw"     params {"peer": 1, "bytes": 268435456} -> {"gbps": 380.0, "seconds": ...}
 *   "nccl_allreduce" params {"devices": [0,1,...], "bytes": 268435456}
 *                -> {"busbw_gbps": 350.0, "correct": true, "seconds": ...}
 */
#ifndef AUTOHEAL_CUDA_CHECKS_H_
#define AUTOHEAL_CUDA_CHECKS_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AUTOHEAL_CUDA_ABI_VERSION 1

int autoheal_cuda_abi_version(void);
/* Number of CUDA devices visible to this process (honours CUDA_VISIBLE_DEVICES), or < 0. */
int autoheal_cuda_device_count(void);
int autoheal_cuda_run(const char* check, int device, const char* params_json, char* out,
                      size_t out_len);

#ifdef __cplusplus
}
#endif

#endif /* AUTOHEAL_CUDA_CHECKS_H_ */
