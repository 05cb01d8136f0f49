// Follows a node's kernel log live, through the epilog's own reader (evidence_sources.h:
// KernelLogCursor, ReadKernelLogSince), so the agent sees exactly the lines the epilog would:
// "kmsg" (/dev/kmsg, records as dmesg-style lines) or a log file. It starts at the end of the
// log (what was there before the agent started is the epilog's) and each Poll returns the
// complete lines added since the last one. A file that is rotated or truncated is read again
// from its start; a partial last line waits for its newline.
// With a state file, Save keeps where it is there, and a follower made again on the same source
// and boot (the agent restarted after a crash) goes on from there: the lines written while it was
// down are read, not skipped (when it was saved within the last 5 minutes: an agent stopped for
// long starts at the end). Save after the lines are handled: a crash in between reads them again
// (handling them is idempotent), never loses them.
#pragma once

#include <cstdint>
#include <string>

#include "autoheal/core/result.h"

namespace autoheal::agent {

class KernelFollower {
  public:
    // `max_bytes`: the most one Poll returns (the newest kept), as kernel_log_max_bytes.
    // `state_file`: where Save keeps the position ("": not kept).
    KernelFollower(std::string source, std::uint64_t max_bytes, std::string state_file = "");

    // Keeps the position reached by the last Poll in the state file (when it moved, or a minute
    // after it was last kept).
    Result<bool> Save();

    // The complete new lines since the last Poll (or since construction); "" when none.
    Result<std::string> Poll();

    const std::string& source() const { return source_; }

  private:
    Result<std::string> PollFile();
    Result<std::string> PollKmsg();

    bool Restore();
    std::string StateText() const;

    std::string source_;
    std::uint64_t max_bytes_;
    std::string state_file_;
    std::string saved_;  // the state file's content as last saved or restored
    std::string cursor_;
    // kmsg: the stamp ("[seconds.micro]") of the last line returned; lines at or before it
    // were seen (the cursor is taken before each read, so a read may repeat a few lines).
    std::string last_stamp_;
};

}  // namespace autoheal::agent
