#include "cluster_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace autoheal::testing {

std::string ClusterDir() {
    const char* d = std::getenv("AUTOHEAL_CLUSTER_DIR");
    return d != nullptr && d[0] != '\0' ? d : "/tmp/autoheal-cluster";
}

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& cwd) {
    CommandResult result;
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return result;
    const std::string conf = "SLURM_CONF=" + ClusterDir() + "/etc/slurm.conf";
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
        putenv(const_cast<char*>(conf.c_str()));
        std::vector<char*> args;
        args.reserve(argv.size() + 1);
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            char buf[4096];
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<std::size_t>(n));
            } else {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

std::optional<std::string> Submit(const std::vector<std::string>& sbatch_args,
                                  const std::string& script, CommandResult* result) {
    static int counter = 0;
    const std::string path = ClusterDir() + "/state/job-" + std::to_string(getpid()) + "-" +
                             std::to_string(counter++) + ".sh";
    std::ofstream(path) << script;
    std::vector<std::string> argv{"sbatch", "--parsable",
                                  "--output=" + ClusterDir() + "/state/slurm-%j.out"};
    argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
    argv.push_back(path);
    CommandResult r = RunCommand(argv, ClusterDir() + "/state");
    if (result != nullptr) *result = r;
    if (r.exit_code != 0) return std::nullopt;
    std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
    return id;
}

std::map<std::string, std::string> ShowJob(const std::string& job_id) {
    std::map<std::string, std::string> fields;
    CommandResult r = RunCommand({"scontrol", "show", "job", "-o", job_id});
    std::istringstream in(r.out);
    std::string token;
    while (in >> token) {
        auto eq = token.find('=');
        if (eq != std::string::npos) fields[token.substr(0, eq)] = token.substr(eq + 1);
    }
    return fields;
}

bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return pred();
}

std::string AutohealLog() {
    std::ifstream in(ClusterDir() + "/log/autoheal.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace autoheal::testing
