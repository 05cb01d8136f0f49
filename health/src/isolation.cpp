#include "isolation.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "autoheal/os/subprocess.h"

namespace autoheal::health {

void WriteAll(int fd, const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = write(fd, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        done += static_cast<std::size_t>(n);
    }
}

std::vector<Child> RunInChildren(const std::vector<std::function<void(int fd)>>& works,
                                 std::chrono::steady_clock::time_point deadline) {
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    std::vector<Child> children(works.size());
    std::vector<std::optional<os::Subprocess>> running(works.size());
    std::vector<os::Subprocess*> started;
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < works.size(); ++i) {
        os::SubprocessSpec spec;
        spec.in_child = [&work = works[i]](int fd) {
            work(fd);
            return 0;
        };
        spec.timeout = std::max(timeout, std::chrono::milliseconds(0));
        spec.capture_limit = kMaxChildOutput;
        auto child = os::Subprocess::Start(std::move(spec));
        if (!child) continue;  // never ran: exit_status -1
        running[i].emplace(std::move(child).value());
        started.push_back(&*running[i]);
        index.push_back(i);
    }
    const auto results = os::WaitAll(started);
    for (std::size_t k = 0; k < started.size(); ++k) {
        Child& c = children[index[k]];
        c.output = started[k]->output();
        if (!results[k]) {
            c.timed_out = results[k].code() == ErrorCode::kUnavailable;
            continue;
        }
        const os::Exit& exit = *results[k];
        c.exit_status = exit.signal != 0 ? 128 + exit.signal : exit.code;
        c.finished = exit.ok();
    }
    return children;
}

}  // namespace autoheal::health
