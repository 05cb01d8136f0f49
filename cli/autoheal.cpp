// autoheal — the admin command line.
#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

constexpr const char* kUsage =
    "usage: autoheal COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  version     print the version\n"
    "  help        print this help\n";

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    std::string_view cmd = argv[1];
    if (cmd == "version" || cmd == "--version") {
        std::printf("autoheal %s\n", AUTOHEAL_VERSION);
        return 0;
    }
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    std::fprintf(stderr, "autoheal: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
}
