#include "autoheal/core/hostlist.h"

#include <charconv>
#include <vector>

namespace autoheal {
namespace {

// The top-level comma-separated items (commas inside brackets belong to the item).
std::vector<std::string_view> Items(std::string_view list) {
    std::vector<std::string_view> items;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= list.size(); ++i) {
        if (i == list.size() || (list[i] == ',' && depth == 0)) {
            if (i > start) items.push_back(list.substr(start, i - start));
            start = i + 1;
        } else if (list[i] == '[') {
            ++depth;
        } else if (list[i] == ']') {
            --depth;
        }
    }
    return items;
}

bool Number(std::string_view s, unsigned long* out) {
    if (s.empty()) return false;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && end == s.data() + s.size();
}

// The n-th name of one item "prefix[ranges]suffix" into *out; when the item has fewer, *n is
// lowered by how many it has. False on bad syntax.
bool NthOfItem(std::string_view item, std::size_t* n, std::optional<std::string>* out) {
    const std::size_t open = item.find('[');
    if (open == std::string_view::npos) {
        if (item.find(']') != std::string_view::npos) return false;
        if (*n == 0) {
            *out = std::string(item);
        } else {
            --*n;
        }
        return true;
    }
    const std::size_t close = item.find(']', open);
    if (close == std::string_view::npos || item.find('[', close) != std::string_view::npos) {
        return false;
    }
    const std::string_view prefix = item.substr(0, open);
    const std::string_view suffix = item.substr(close + 1);
    for (std::string_view range : Items(item.substr(open + 1, close - open - 1))) {
        const std::size_t dash = range.find('-');
        const std::string_view lo_text = range.substr(0, dash);
        const std::string_view hi_text =
            dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
        unsigned long lo = 0, hi = 0;
        if (!Number(lo_text, &lo) || !Number(hi_text, &hi) || hi < lo) return false;
        if (*n <= hi - lo) {
            std::string digits = std::to_string(lo + *n);
            if (digits.size() < lo_text.size()) {
                digits.insert(0, lo_text.size() - digits.size(), '0');
            }
            *out = std::string(prefix) + digits + std::string(suffix);
            return true;
        }
        *n -= hi - lo + 1;
    }
    return true;
}

}  // namespace

std::optional<std::string> NthHost(std::string_view hostlist, std::size_t n) {
    for (std::string_view item : Items(hostlist)) {
        std::optional<std::string> found;
        std::size_t left = n;
        if (!NthOfItem(item, &left, &found)) return std::nullopt;
        if (found) return found;
        n = left;
    }
    return std::nullopt;
}

}  // namespace autoheal
