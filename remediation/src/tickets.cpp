#include "autoheal/remediation/tickets.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include "autoheal/core/files.h"
#include "autoheal/os/subprocess.h"

namespace autoheal::remediation {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxSecretBytes = 4096;
constexpr std::size_t kMaxSpoolName = 100;
constexpr std::size_t kSpoolPrefix = 64;
constexpr std::size_t kOutputTail = 512;

std::string ErrnoText(int error) { return std::generic_category().message(error); }

// ---- spool ----

bool SpoolSafe(unsigned char c) {
    return std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-' || c == '@' || c == ':';
}

std::uint64_t Fnv1a64(const std::string& s) {
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

Result<std::string> DeliverSpool(const TicketSinkConfig& sink, const TicketRow& ticket) {
    const std::string target = SpoolFilePath(sink, ticket);
    auto written = WriteFileAtomically(target, ticket.payload_json, 0640, 0750);
    if (!written) return MakeError("spool " + sink.name + ": " + written.error());
    return target;
}

// ---- webhook ----

const std::string kJsonHeader = "Content-Type: application/json";
const std::string kNoExpectHeader = "Expect:";

std::once_flag curl_once;
CURLcode curl_init_code = CURLE_FAILED_INIT;

std::size_t DiscardBody(char* /*data*/, std::size_t size, std::size_t count, void* /*user*/) {
    return size * count;
}

struct CurlDeleter {
    void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct SlistDeleter {
    void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

// Overwrites a string holding the secret before it is freed.
void Scrub(std::string* s) {
    std::fill(s->begin(), s->end(), '\0');
    s->clear();
}

Result<std::string> DeliverWebhook(const TicketSinkConfig& sink, const TicketRow& ticket) {
    const std::string who = "webhook " + sink.name + ": ";
    std::string authorization;
    if (!sink.secret_file.empty()) {
        auto secret = ReadWebhookSecret(sink.secret_file);
        if (!secret) return MakeError(who + secret.error());
        authorization = "Authorization: Bearer " + *secret;
        Scrub(&secret.value());
    }
    std::call_once(curl_once, [] { curl_init_code = curl_global_init(CURL_GLOBAL_DEFAULT); });
    if (curl_init_code != CURLE_OK) {
        Scrub(&authorization);
        return MakeError(who + "libcurl init: " + curl_easy_strerror(curl_init_code));
    }
    std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
    if (!curl) {
        Scrub(&authorization);
        return MakeError(who + "libcurl: cannot create a handle");
    }
    // "Expect:" turns off curl's 100-continue round trip for larger bodies.
    std::unique_ptr<curl_slist, SlistDeleter> headers;
    bool headers_ok = true;
    for (const std::string* h : std::initializer_list<const std::string*>{
             &kJsonHeader, &kNoExpectHeader, &authorization}) {
        if (h->empty()) continue;
        curl_slist* head = curl_slist_append(headers.get(), h->c_str());
        if (head == nullptr) {
            headers_ok = false;
            break;
        }
        if (!headers) headers.reset(head);  // appending to a list returns the same head
    }
    Scrub(&authorization);
    if (!headers_ok) return MakeError(who + "libcurl: out of memory");

    const long timeout_ms = std::max(1L, static_cast<long>(sink.timeout_seconds * 1000));
    char error_buffer[CURL_ERROR_SIZE] = {};
    CURL* h = curl.get();
    CURLcode set = CURLE_OK;
    auto opt = [&](CURLoption option, auto value) {
        if (set == CURLE_OK) set = curl_easy_setopt(h, option, value);
    };
    opt(CURLOPT_ERRORBUFFER, error_buffer);
    opt(CURLOPT_URL, sink.url.c_str());
    // Only http(s), for the URL and any redirect (which is not followed anyway: see tickets.h).
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85.0: the _STR forms; Debian 12 has 7.88.1
    opt(CURLOPT_PROTOCOLS_STR, "http,https");
    opt(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    opt(CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    opt(CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    opt(CURLOPT_FOLLOWLOCATION, 0L);
    opt(CURLOPT_NOSIGNAL, 1L);
    opt(CURLOPT_POST, 1L);
    opt(CURLOPT_POSTFIELDS, ticket.payload_json.c_str());
    opt(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(ticket.payload_json.size()));
    opt(CURLOPT_HTTPHEADER, headers.get());
    opt(CURLOPT_USERAGENT, "autoheal");
    opt(CURLOPT_TIMEOUT_MS, timeout_ms);
    opt(CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    opt(CURLOPT_WRITEFUNCTION, &DiscardBody);
    if (set != CURLE_OK) return MakeError(who + "libcurl setup: " + curl_easy_strerror(set));

    const CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        std::string message = who + curl_easy_strerror(rc);
        error_buffer[CURL_ERROR_SIZE - 1] = '\0';
        if (error_buffer[0] != '\0' && message.find(error_buffer) == std::string::npos) {
            message += " (";
            message += error_buffer;
            message += ")";
        }
        return MakeError(std::move(message));
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status <= 299) return "HTTP " + std::to_string(status);
    std::string message = who + "HTTP " + std::to_string(status);
    if (status >= 300 && status <= 399) message += " (redirects are not followed)";
    return MakeError(std::move(message));
}

// ---- command ----

// The last non-empty line of a command's output, shortened and without control characters.
std::string LastLine(const std::string& output) {
    std::size_t end = output.size();
    while (end > 0 && (output[end - 1] == '\n' || output[end - 1] == '\r' ||
                       output[end - 1] == ' ' || output[end - 1] == '\t')) {
        --end;
    }
    const std::size_t nl = output.rfind('\n', end == 0 ? 0 : end - 1);
    std::size_t begin = (nl == std::string::npos || end == 0) ? 0 : nl + 1;
    if (end - begin > 200) begin = end - 200;
    std::string line = output.substr(begin, end - begin);
    for (char& c : line) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    }
    return line;
}

Result<std::string> DeliverCommand(const TicketSinkConfig& sink, const TicketRow& ticket) {
    const std::string who = "command " + sink.name + ": ";
    if (sink.argv.empty()) return MakeError(ErrorCode::kInvalid, who + "no argv");
    os::SubprocessSpec spec;
    spec.argv = sink.argv;
    spec.input = ticket.payload_json;
    spec.timeout = std::chrono::milliseconds(static_cast<long>(sink.timeout_seconds * 1000));
    spec.capture_limit = kOutputTail;
    spec.keep_tail = true;
    auto child = os::Subprocess::Start(std::move(spec));
    if (!child) return MakeError(child.code(), who + child.error());
    os::Subprocess& running = child.value();
    const auto exit = running.Wait();
    const std::string tail = LastLine(running.output());
    auto with_tail = [&](ErrorCode code, std::string message) {
        if (!tail.empty()) message += ": " + tail;
        return MakeError(code, std::move(message));
    };
    if (!exit) return with_tail(exit.code(), who + exit.error());
    if (exit->ok()) return std::string("exit 0");
    // The sink's program refused or failed: the ticket is tried again later.
    return with_tail(ErrorCode::kUnavailable, who + exit->Describe());
}

std::string TicketLine(const TicketRow& ticket, const std::string& what) {
    return "ticket " + std::to_string(ticket.id) + " sink=" + ticket.sink + ": " + what;
}

}  // namespace

Result<std::vector<std::int64_t>> OpenTickets(IncidentStore& store, std::int64_t incident_id,
                                              const std::string& kind, const std::string& dedup_key,
                                              const std::string& payload_json,
                                              const TicketConfig& config) {
    if (dedup_key.empty()) return MakeError("open tickets: empty dedup key");
    std::vector<std::int64_t> ids;
    for (const TicketSinkConfig& sink : config.sinks) {
        auto id = store.OpenTicket(incident_id, kind, dedup_key + "@" + sink.name, payload_json,
                                   sink.name);
        if (!id) return MakeError(id.error());
        ids.push_back(*id);
    }
    return ids;
}

std::int64_t TicketRetryDelay(const TicketConfig& config, int attempts) {
    const std::int64_t cap = std::max<std::int64_t>(1, config.retry_max_seconds);
    std::int64_t delay = std::clamp<std::int64_t>(config.retry_initial_seconds, 1, cap);
    for (int i = 0; i < attempts && delay < cap; ++i) {
        delay = delay > cap / 2 ? cap : delay * 2;
    }
    return std::min(delay, cap);
}

std::string SpoolFilePath(const TicketSinkConfig& sink, const TicketRow& ticket) {
    const std::string& key = ticket.dedup_key;
    std::string name;
    if (!key.empty() && key.size() <= kMaxSpoolName &&
        std::all_of(key.begin(), key.end(), [](unsigned char c) { return SpoolSafe(c); })) {
        name = key;
    } else {
        for (std::size_t i = 0; i < key.size() && i < kSpoolPrefix; ++i) {
            name += SpoolSafe(static_cast<unsigned char>(key[i])) ? key[i] : '_';
        }
        char hash[17];
        std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(Fnv1a64(key)));
        if (!name.empty()) name += '-';
        name += hash;
    }
    std::string kind = ticket.kind;
    if (kind.empty() || kind.size() > 32 ||
        !std::all_of(kind.begin(), kind.end(), [](unsigned char c) { return std::isalnum(c); })) {
        kind = "ticket";
    }
    return sink.dir + "/" + kind + "-" + name + ".json";
}

Result<std::string> ReadWebhookSecret(const std::string& path) {
    const std::string who = "secret file " + path + ": ";
    // O_NONBLOCK: a FIFO planted at the path must not block the open.
    const int raw = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (raw < 0) {
        const int e = errno;
        return MakeError(who + (e == ELOOP ? std::string("is a symbolic link") : ErrnoText(e)));
    }
    UniqueFd fd(raw);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return MakeError(who + ErrnoText(errno));
    if (!S_ISREG(st.st_mode)) return MakeError(who + "is not a regular file");
    if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
        return MakeError(who + "must be owned by root (owner uid " + std::to_string(st.st_uid) +
                         ")");
    }
    if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return MakeError(who + "mode " + mode + " is too open: must be 0600 or stricter");
    }
    if (st.st_size > static_cast<off_t>(kMaxSecretBytes)) {
        return MakeError(who + "larger than " + std::to_string(kMaxSecretBytes) + " bytes");
    }
    std::string secret(kMaxSecretBytes + 1, '\0');
    std::size_t got = 0;
    while (got < secret.size()) {
        const ssize_t n = ::read(fd.get(), secret.data() + got, secret.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            Scrub(&secret);
            return MakeError(who + ErrnoText(e));
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got > kMaxSecretBytes) {
        Scrub(&secret);
        return MakeError(who + "larger than " + std::to_string(kMaxSecretBytes) + " bytes");
    }
    secret.resize(got);
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                               secret.back() == ' ' || secret.back() == '\t')) {
        secret.pop_back();
    }
    if (secret.empty()) return MakeError(who + "is empty");
    if (std::any_of(secret.begin(), secret.end(),
                    [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
        Scrub(&secret);
        return MakeError(who + "contains control characters (one line expected)");
    }
    return secret;
}

Result<std::string> DeliverTicket(const TicketSinkConfig& sink, const TicketRow& ticket) {
    try {
        switch (sink.type) {
            case TicketSinkType::kSpool:
                return DeliverSpool(sink, ticket);
            case TicketSinkType::kWebhook:
                return DeliverWebhook(sink, ticket);
            case TicketSinkType::kCommand:
                return DeliverCommand(sink, ticket);
        }
        return MakeError(sink.name + ": unknown sink type");
    } catch (const std::exception& e) {
        return MakeError(std::string(TicketSinkTypeName(sink.type)) + " " + sink.name + ": " +
                         e.what());
    }
}

Result<TicketDeliverySummary> DeliverDueTickets(IncidentStore& store, const TicketConfig& config,
                                                std::int64_t now, int limit,
                                                double budget_seconds) {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(std::max(0.0, budget_seconds)));
    std::map<std::string, const TicketSinkConfig*> sinks;
    for (const TicketSinkConfig& sink : config.sinks) sinks.emplace(sink.name, &sink);

    TicketDeliverySummary summary;
    std::set<std::int64_t> seen;  // tickets handled (or skipped) in this call
    int attempted = 0;
    bool first = true;
    // Tickets of unconfigured sinks stay due: each round asks for as many more rows as were
    // already seen, so that they never hide the deliverable tickets behind them.
    while (attempted < limit) {
        const std::int64_t want = std::min<std::int64_t>(
            std::numeric_limits<int>::max(),
            static_cast<std::int64_t>(limit - attempted) + static_cast<std::int64_t>(seen.size()));
        auto due = store.DueTickets(now, static_cast<int>(want));
        if (!due) {
            if (first) return MakeError(due.error());
            summary.errors.push_back("due tickets: " + due.error());
            spdlog::error("autoheal: tickets: cannot list due tickets: {}", due.error());
            break;
        }
        first = false;
        bool progressed = false;
        for (const TicketRow& ticket : *due) {
            if (attempted >= limit) break;
            if (!seen.insert(ticket.id).second) continue;
            progressed = true;
            const auto it = sinks.find(ticket.sink);
            if (it == sinks.end()) {
                ++summary.skipped;
                summary.errors.push_back(
                    TicketLine(ticket, "sink not configured; the ticket stays pending"));
                spdlog::warn(
                    "autoheal: tickets: sink not configured, ticket left pending: ticket={} "
                    "sink={} kind={}",
                    ticket.id, ticket.sink, ticket.kind);
                continue;
            }
            if (Clock::now() >= deadline) {
                summary.budget_spent = true;
                spdlog::warn("autoheal: tickets: time budget spent, due tickets left: budget={}s",
                             budget_seconds);
                return summary;
            }
            ++attempted;
            auto outcome = DeliverTicket(*it->second, ticket);
            if (outcome) {
                auto marked = store.MarkTicketDelivered(ticket.id);
                if (!marked) {
                    ++summary.failed;
                    summary.errors.push_back(TicketLine(
                        ticket,
                        "delivered (" + *outcome + ") but not recorded: " + marked.error()));
                    spdlog::error(
                        "autoheal: tickets: delivered but not recorded: {} ticket={} sink={}",
                        marked.error(), ticket.id, ticket.sink);
                    continue;
                }
                ++summary.delivered;
                spdlog::info("autoheal: tickets: delivered ticket={} kind={} sink={} to={}",
                             ticket.id, ticket.kind, ticket.sink, *outcome);
                continue;
            }
            const std::int64_t delay = TicketRetryDelay(config, ticket.attempts);
            const std::int64_t next = now > kNeverRetry - delay ? kNeverRetry : now + delay;
            auto marked = store.MarkTicketFailed(ticket.id, outcome.error(), next);
            ++summary.failed;
            std::string line = outcome.error();
            if (!marked) line += "; not recorded: " + marked.error();
            summary.errors.push_back(TicketLine(ticket, line));
            spdlog::warn(
                "autoheal: tickets: delivery failed: {} ticket={} kind={} sink={} attempts={} "
                "retry_at={}",
                outcome.error(), ticket.id, ticket.kind, ticket.sink, ticket.attempts + 1, next);
            if (!marked) {
                spdlog::error("autoheal: tickets: failure not recorded: {} ticket={}",
                              marked.error(), ticket.id);
            }
        }
        if (!progressed) break;
    }
    return summary;
}

}  // namespace autoheal::remediation
