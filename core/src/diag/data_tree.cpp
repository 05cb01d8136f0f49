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
        *out = tree->AddScalar(Kind::kInt, static_cast<std::int64_t>(j.get<std::uint64_t>()));
    } else if (j.is_number_integer()) {
        *out = tree->AddScalar(Kind::kInt, j.get<std::int64_t>());
    } else if (j.is_number_float()) {
        *out = tree->AddFloat(j.get<double>());
    } else if (j.is_string()) {
        *out = tree->AddString(Kind::kString, j.get_ref<const std::string&>());
    } else if (j.is_array()) {
        const Ref r = tree->AddContainer(Kind::kList);
        for (const auto& item : j) {
            Ref child = 0;
            if (!Convert(item, tree, max_nodes, &child)) return false;
            tree->MutItems(r).push_back(child);
        }
        *out = r;
    } else if (j.is_object()) {
        const Ref r = tree->AddContainer(Kind::kDict);
        for (const auto& [key, value] : j.items()) {
            const Ref k = tree->AddString(Kind::kString, key);
            Ref child = 0;
            if (!Convert(value, tree, max_nodes, &child)) return false;
            tree->MutMap(r).emplace_back(k, child);
        }
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

const DataTree::Items& DataTree::ItemsOf(Ref r) const {
    static const Items kNone;
    return kind(r) == Kind::kList ? lists_[nodes_[r].aux] : kNone;
}

const DataTree::Map& DataTree::MapOf(Ref r) const {
    static const Map kNone;
    return kind(r) == Kind::kDict ? dicts_[nodes_[r].aux] : kNone;
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
    std::uint32_t index = 0;
    if (kind == Kind::kDict) {
        index = static_cast<std::uint32_t>(dicts_.size());
        dicts_.emplace_back(arena_.get());
    } else {
        kind = Kind::kList;
        index = static_cast<std::uint32_t>(lists_.size());
        lists_.emplace_back(arena_.get());
    }
    nodes_.push_back(Node{kind, index, 0});
    return static_cast<Ref>(nodes_.size() - 1);
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
    if (!Convert(j, &tree, limits.max_nodes, &root)) {
        return MakeError(ErrorCode::kInvalid, "more than the node limit");
    }
    tree.set_root(root);
    return tree;
}

}  // namespace autoheal::diag
