// A tiny HTTP/1.1 server for tests (one connection at a time, Connection: close) on
// 127.0.0.1: real HTTP for the ticket webhook, in unit and cluster tests.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace autoheal::testing {

// ---- a tiny HTTP/1.1 server: one connection at a time, Connection: close ----

struct HttpRequest {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
};

class HttpServer {
  public:
    // Listens on 127.0.0.1:port (0: any free port) and answers each request with the next of
    // `statuses` (the last one repeats). hang: read the request, never answer.
    explicit HttpServer(std::vector<int> statuses, int port = 0, bool hang = false)
        : statuses_(std::move(statuses)), hang_(hang) {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(listen_fd_, 16) != 0) {
            ADD_FAILURE() << "cannot listen on 127.0.0.1:" << port << ": " << strerror(errno);
            return;
        }
        socklen_t len = sizeof addr;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        if (::pipe2(stop_, O_CLOEXEC) != 0) ADD_FAILURE() << "pipe";
        thread_ = std::thread([this] { Serve(); });
    }
    ~HttpServer() {
        if (thread_.joinable()) {
            char c = 'x';
            (void)!::write(stop_[1], &c, 1);
            thread_.join();
        }
        for (int fd : {listen_fd_, stop_[0], stop_[1]}) {
            if (fd >= 0) ::close(fd);
        }
    }
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    int port() const { return port_; }
    std::string url() const {
        return "http://127.0.0.1:" + std::to_string(port_) + "/api/autoheal";
    }
    std::vector<HttpRequest> requests() const {
        std::lock_guard<std::mutex> lock(mu_);
        return requests_;
    }

  private:
    // Waits until fd is readable; false when the server is stopping or 10 s passed.
    bool WaitReadable(int fd) {
        pollfd fds[2] = {{fd, POLLIN, 0}, {stop_[0], POLLIN, 0}};
        return ::poll(fds, 2, 10000) > 0 && (fds[1].revents & POLLIN) == 0 &&
               (fds[0].revents & (POLLIN | POLLHUP)) != 0;
    }

    // Until the server stops, however long no client comes (a test may first spend minutes on
    // a cluster before the webhook is called).
    void Serve() {
        for (;;) {
            pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
            if (::poll(fds, 2, -1) < 0) {
                if (errno == EINTR) continue;
                return;
            }
            if ((fds[1].revents & POLLIN) != 0) return;
            if ((fds[0].revents & POLLIN) == 0) continue;
            const int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (conn < 0) continue;
            Handle(conn);
            ::close(conn);
        }
    }

    void Handle(int conn) {
        std::string data;
        char buffer[4096];
        std::size_t header_end = std::string::npos;
        while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
            if (!WaitReadable(conn)) return;
            const ssize_t n = ::read(conn, buffer, sizeof buffer);
            if (n <= 0) return;
            data.append(buffer, static_cast<std::size_t>(n));
        }
        HttpRequest request;
        std::istringstream head(data.substr(0, header_end));
        std::string line;
        std::getline(head, line);
        std::istringstream first(line);
        first >> request.method >> request.target;
        while (std::getline(head, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            const auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string name = line.substr(0, colon);
            std::transform(name.begin(), name.end(), name.begin(),
                           [](unsigned char c) { return std::tolower(c); });
            std::string value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            request.headers[name] = value;
        }
        const std::size_t length = request.headers.count("content-length") != 0
                                       ? std::stoul(request.headers["content-length"])
                                       : 0;
        request.body = data.substr(header_end + 4);
        while (request.body.size() < length) {
            if (!WaitReadable(conn)) return;
            const ssize_t n = ::read(conn, buffer, sizeof buffer);
            if (n <= 0) return;
            request.body.append(buffer, static_cast<std::size_t>(n));
        }
        int status;
        {
            std::lock_guard<std::mutex> lock(mu_);
            requests_.push_back(request);
            status = statuses_[std::min(requests_.size(), statuses_.size()) - 1];
        }
        if (hang_) {
            WaitReadable(stop_[0]);  // until the test ends
            return;
        }
        std::string response = "HTTP/1.1 " + std::to_string(status) + " Test\r\n";
        if (status >= 300 && status <= 399) {
            response += "Location: http://127.0.0.1:" + std::to_string(port_) + "/moved\r\n";
        }
        response += "Content-Length: 2\r\nConnection: close\r\n\r\nok";
        (void)!::write(conn, response.data(), response.size());
    }

    const std::vector<int> statuses_;
    const bool hang_;
    int listen_fd_ = -1;
    int stop_[2] = {-1, -1};
    int port_ = 0;
    mutable std::mutex mu_;
    std::vector<HttpRequest> requests_;
    std::thread thread_;
};

}  // namespace autoheal::testing
