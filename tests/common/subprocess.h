// Runs a program without a shell and captures its output, for tests.
#pragma once

#include <string>
#include <vector>

namespace autoheal::testing {

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// Runs argv (argv[0] looked up on PATH); `env` entries NAME=VALUE are added to the
// environment; `cwd` if not empty; `input` is written to standard input.
CommandResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {}, const std::string& cwd = "",
                         const std::string& input = "");

}  // namespace autoheal::testing
