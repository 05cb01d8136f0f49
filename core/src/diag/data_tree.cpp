// DataTree lookups and the JSON reader (data_tree.h).
#include "autoheal/diag/data_tree.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace autoheal::diag {
namespace {

using Kind = DataTree::Kind;
using Ref = DataTree::Ref;

// The deepest nesting of arrays and objects in `text`, outside strings; stops counting past
// `limit` (nlohmann's parser recurses, so a deep document is refused before it is parsed).
std::size_t Depth(std::string_view text, std::size_t limit) {
    std::size_t depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
            if (deepest > limit) return deepest;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

bool Convert(const nlohmann::json& j, DataTree* tree, std::size_t max_nodes, Ref* out) {
    if (tree->size() >= max_nodes) return false;
    if (j.is_boolean()) {
        *out = tree->AddScalar(Kind::kBool, j.get<bool>());
    } else if (j.is_number_unsigned()) {
        *out = tree->AddInt(static_cast<std::int64_t>(j.get<std::uint64_t>()));
    } else if (j.is_number_integer()) {
        *out = tree->AddInt(j.get<std::int64_t>());
    } else if (j.is_number_float()) {
        *out = tree->AddFloat(j.get<double>());
    } else if (j.is_string()) {
        *out = tree->AddString(Kind::kString, j.get_ref<const std::string&>());
    } else if (j.is_array()) {
        const Ref r = tree->AddContainer(Kind::kList);
        std::vector<Ref> items;
        items.reserve(j.size());
        for (const auto& item : j) {
            Ref child = 0;
            if (!Convert(item, tree, max_nodes, &child)) return false;
            items.push_back(child);
        }
        if (tree->items() + items.size() > max_nodes) return false;
        tree->AddItems(r, items.data(), items.size());
        *out = r;
    } else if (j.is_object()) {
        const Ref r = tree->AddContainer(Kind::kDict);
        std::vector<Ref> items;
        items.reserve(2 * j.size());
        for (const auto& [key, value] : j.items()) {
            items.push_back(tree->AddString(Kind::kString, key));
            Ref child = 0;
            if (!Convert(value, tree, max_nodes, &child)) return false;
            items.push_back(child);
        }
        if (tree->items() + items.size() > max_nodes) return false;
        tree->AddItems(r, items.data(), items.size());
        *out = r;
    } else {
        *out = tree->AddScalar(Kind::kNone, 0);  // null, and binary values (not in JSON text)
    }
    return true;
}

}  // namespace

double DataTree::Float(Ref r) const {
    if (kind(r) != Kind::kFloat) return 0;
    double f = 0;
    std::memcpy(&f, &nodes_[r].value, sizeof f);
    return f;
}

std::string_view DataTree::Str(Ref r) const {
    if (kind(r) != Kind::kString && kind(r) != Kind::kBytes) return {};
    return std::string_view(strings_).substr(static_cast<std::size_t>(nodes_[r].value),
                                             nodes_[r].aux);
}

DataTree::Items DataTree::ItemsOf(Ref r) const {
    if (kind(r) != Kind::kList) return {};
    const Span& s = list_spans_[nodes_[r].aux];
    return Items(refs_).subspan(s.first, s.count);
}

DataTree::Map DataTree::MapOf(Ref r) const {
    if (kind(r) != Kind::kDict) return {};
    const Span& s = dict_spans_[nodes_[r].aux];
    return Map(Items(refs_).subspan(s.first, s.count));
}

bool DataTree::Find(Ref dict, std::string_view key, Ref* value) const {
    for (const auto& [k, v] : MapOf(dict)) {
        if (kind(k) == Kind::kString && Str(k) == key) {
            *value = v;
            return true;
        }
    }
    return false;
}

DataTree::Ref DataTree::AddInt(std::int64_t value) {
    if (IntFitsInline(value)) return kInlineInt | (static_cast<Ref>(value) & ~kInlineInt);
    return AddScalar(Kind::kInt, value);
}

DataTree::Ref DataTree::AddScalar(Kind kind, std::int64_t value) {
    nodes_.push_back(Node{kind, 0, value});
    return static_cast<Ref>(nodes_.size() - 1);
}

DataTree::Ref DataTree::AddFloat(double f) {
    std::int64_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    return AddScalar(Kind::kFloat, bits);
}

DataTree::Ref DataTree::AddString(Kind kind, std::string_view s) {
    nodes_.push_back(Node{kind, static_cast<std::uint32_t>(s.size()),
                          static_cast<std::int64_t>(strings_.size())});
    strings_.append(s);
    return static_cast<Ref>(nodes_.size() - 1);
}

DataTree::Ref DataTree::AddContainer(Kind kind) {
    if (kind != Kind::kDict) kind = Kind::kList;
    auto& spans = kind == Kind::kDict ? dict_spans_ : list_spans_;
    nodes_.push_back(Node{kind, static_cast<std::uint32_t>(spans.size()), 0});
    spans.emplace_back();
    return static_cast<Ref>(nodes_.size() - 1);
}

void DataTree::AddItems(Ref container, const Ref* items, std::size_t n) {
    if (n == 0) return;
    const bool dict = kind(container) == Kind::kDict;
    const std::uint32_t span = nodes_[container].aux;
    Span& s = dict ? dict_spans_[span] : list_spans_[span];
    const auto header = static_cast<std::uint32_t>(refs_.size());
    refs_.push_back(s.last);
    refs_.push_back(static_cast<Ref>(n));
    refs_.insert(refs_.end(), items, items + n);
    s.first = header + 2;
    s.count += static_cast<std::uint32_t>(n);
    s.last = header;
    if (++s.runs == 2) split_.emplace_back(dict, span);
    items_added_ += n;
}

void DataTree::Finish(Ref root) {
    root_ = root;
    // A container filled by one run keeps it where it is; the runs of the others are copied to
    // the end, oldest first.
    std::vector<std::uint32_t> runs;
    for (const auto& [dict, span] : split_) {
        Span& s = dict ? dict_spans_[span] : list_spans_[span];
        runs.clear();
        std::uint32_t header = s.last;
        for (std::uint32_t k = 0; k < s.runs; ++k, header = refs_[header]) runs.push_back(header);
        const std::size_t first = refs_.size();
        refs_.resize(first + s.count);
        std::size_t at = first;
        for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
            const std::uint32_t n = refs_[*it + 1];
            for (std::uint32_t k = 0; k < n; ++k) refs_[at++] = refs_[*it + 2 + k];
        }
        s.first = static_cast<std::uint32_t>(first);
    }
    split_.clear();
}

void DataTree::Reserve(std::size_t nodes, std::size_t items, std::size_t containers) {
    nodes_.reserve(nodes);
    refs_.reserve(items);
    list_spans_.reserve(containers);
    dict_spans_.reserve(containers / 4);
}

Result<DataTree> ReadJsonData(std::string_view text, const DataLimits& limits) {
    if (text.size() > limits.max_bytes) {
        return MakeError(ErrorCode::kInvalid,
                         "larger than " + std::to_string(limits.max_bytes) + " bytes");
    }
    if (Depth(text, limits.max_depth) > limits.max_depth) {
        return MakeError(ErrorCode::kInvalid,
                         "nested deeper than " + std::to_string(limits.max_depth) + " levels");
    }
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return MakeError(ErrorCode::kInvalid, "not JSON");
    DataTree tree;
    Ref root = 0;
    if (!Convert(j, &tree, std::min(limits.max_nodes, DataTree::kMaxNodes), &root)) {
        return MakeError(ErrorCode::kInvalid, "more than the node limit");
    }
    tree.Finish(root);
    return tree;
}

}  // namespace autoheal::diag
