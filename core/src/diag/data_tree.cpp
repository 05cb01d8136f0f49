// DataTree lookups and the JSON reader (data_tree.h).
#include "autoheal/diag/data_tree.h"

#include <algorithm>
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
    DataTree::Node n;
    if (j.is_null()) {
        n.kind = Kind::kNone;
    } else if (j.is_boolean()) {
        n.kind = Kind::kBool;
        n.i = j.get<bool>();
    } else if (j.is_number_unsigned()) {
        n.kind = Kind::kInt;
        n.i = static_cast<std::int64_t>(j.get<std::uint64_t>());
    } else if (j.is_number_integer()) {
        n.kind = Kind::kInt;
        n.i = j.get<std::int64_t>();
    } else if (j.is_number_float()) {
        n.kind = Kind::kFloat;
        n.f = j.get<double>();
    } else if (j.is_string()) {
        n.kind = Kind::kString;
        n.s = j.get_ref<const std::string&>();
    } else if (j.is_array()) {
        n.kind = Kind::kList;
    } else if (j.is_object()) {
        n.kind = Kind::kDict;
    } else {
        n.kind = Kind::kBytes;  // binary values (not in JSON text)
    }
    const Ref r = tree->Add(std::move(n));
    if (j.is_array()) {
        for (const auto& item : j) {
            Ref child = 0;
            if (!Convert(item, tree, max_nodes, &child)) return false;
            tree->mut(r).items.push_back(child);
        }
    } else if (j.is_object()) {
        for (const auto& [key, value] : j.items()) {
            DataTree::Node k;
            k.kind = Kind::kString;
            k.s = key;
            const Ref kr = tree->Add(std::move(k));
            Ref child = 0;
            if (!Convert(value, tree, max_nodes, &child)) return false;
            tree->mut(r).map.emplace_back(kr, child);
        }
    }
    *out = r;
    return true;
}

}  // namespace

DataTree::Ref DataTree::FindRef(Ref dict, std::string_view key, bool* found) const {
    *found = false;
    if (dict >= nodes_.size() || nodes_[dict].kind != Kind::kDict) return 0;
    for (const auto& [k, v] : nodes_[dict].map) {
        const Node& kn = nodes_[k];
        if (kn.kind == Kind::kString && kn.s == key) {
            *found = true;
            return v;
        }
    }
    return 0;
}

const DataTree::Node* DataTree::Find(Ref dict, std::string_view key) const {
    bool found = false;
    const Ref r = FindRef(dict, key, &found);
    return found ? &nodes_[r] : nullptr;
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
