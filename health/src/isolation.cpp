#include "isolation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <exception>

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

Child SpawnChild(const std::function<void(int fd)>& work) {
    Child child;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return child;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return child;
    }
    if (pid == 0) {
        close(fds[0]);
        int status = 0;
        try {
            work(fds[1]);
        } catch (...) {
            status = 70;
        }
        close(fds[1]);
        _exit(status);
    }
    close(fds[1]);
    child.pid = pid;
    child.fd = fds[0];
    return child;
}

void WaitForChildren(std::vector<Child>* children, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        std::vector<pollfd> fds;
        std::vector<Child*> owners;
        for (Child& c : *children) {
            if (c.fd >= 0) {
                fds.push_back(pollfd{c.fd, POLLIN, 0});
                owners.push_back(&c);
            }
        }
        if (fds.empty()) break;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        int n =
            poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (n < 0 && errno != EINTR) break;
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].revents == 0) continue;
            char buf[8192];
            ssize_t r = read(fds[i].fd, buf, sizeof buf);
            if (r > 0) {
                owners[i]->output.append(buf, static_cast<std::size_t>(r));
            } else if (r == 0 || errno != EINTR) {
                close(owners[i]->fd);
                owners[i]->fd = -1;
            }
        }
    }
    for (Child& c : *children) {
        if (c.pid < 0) continue;
        if (c.fd >= 0) {
            // Still writing at the deadline: stop it.
            kill(c.pid, SIGKILL);
            close(c.fd);
            c.fd = -1;
            c.timed_out = true;
        }
        int status = 0;
        // A child that closed its pipe exits at once; give it a moment, never block for long.
        for (int i = 0; i < 50; ++i) {
            pid_t r = waitpid(c.pid, &status, WNOHANG);
            if (r == c.pid) {
                c.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                c.finished = !c.timed_out && c.exit_status == 0;
                break;
            }
            if (r < 0) break;
            usleep(2000);
        }
    }
}

}  // namespace autoheal::health
