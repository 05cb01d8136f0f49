// NVML's Xid event stream (nvmlEventSetCreate, nvmlDeviceRegisterEvents for
// nvmlEventTypeXidCriticalError, nvmlEventSetWait_v2): the Xids the driver also writes to the
// kernel log as "NVRM: Xid", read where the kernel log cannot be (a container without
// /dev/kmsg) or loses lines. NVML may hang on a lost GPU, so the stream runs in a child process
// (autoheal-agent's XidEventWatch) that its parent kills when it stops answering.
#pragma once

#include <string>

namespace autoheal::health {

// Runs until NVML fails or nobody reads `fd` any more, writing one line per thing seen:
//   "xid <PCI bus id> <xid>"  an event, the bus id as the kernel writes it ("0000:3b:00.0 79")
//   "."                       a wait of `wait_ms` that saw nothing (the parent's sign of life)
//   "error <text>"            why NVML's events cannot be read (no driver, no GPU takes them);
//                             then it returns 1.
int StreamXidEvents(const std::string& library, int fd, unsigned wait_ms);

}  // namespace autoheal::health
