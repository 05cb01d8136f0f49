// Stage 1 of rule loading: YAML text to items, with locations for every key.
#include <algorithm>
#include <set>
#include <sstream>

#include "rule_loader_internal.h"

namespace autoheal::diag::internal {
namespace {

const std::set<std::string>& AllowedKeys(ItemKind kind) {
    static const std::set<std::string> kSignature{"signature", "regex",   "desc",
                                                  "example",   "enabled", "override"};
    static const std::set<std::string> kList{"list", "items", "enabled", "override"};
    static const std::set<std::string> kRule{"rule",
                                             "desc",
                                             "doc",
                                             "match",
                                             "unless",
                                             "cause",
                                             "actions",
                                             "requeue",
                                             "confidence",
                                             "priority",
                                             "suppressed_by",
                                             "escalate",
                                             "contributes_actions",
                                             "interrupts_job",
                                             "guess",
                                             "culprit_node",
                                             "example",
                                             "enabled",
                                             "override"};
    switch (kind) {
        case ItemKind::kSignature:
            return kSignature;
        case ItemKind::kList:
            return kList;
        case ItemKind::kRule:
            return kRule;
    }
    return kRule;
}

std::size_t EditDistance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> prev(b.size() + 1);
    std::vector<std::size_t> cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            cur[j] = std::min(
                {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string Suggest(const std::string& key, const std::set<std::string>& allowed) {
    std::string best;
    std::size_t best_d = 3;
    for (const std::string& k : allowed) {
        std::size_t d = EditDistance(key, k);
        if (d < best_d) {
            best_d = d;
            best = k;
        }
    }
    return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string Join(const std::set<std::string>& keys) {
    std::string out;
    for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out;
}

}  // namespace

std::vector<ItemInfo> ReadItems(const SourceFile& file, std::size_t file_index, Reporter& report) {
    std::vector<ItemInfo> items;
    YAML::Node root;
    try {
        root = YAML::Load(file.text);
    } catch (const YAML::Exception& e) {
        report.Error("LOAD_ERR_YAML_PARSE", Location{file.name, e.mark.line + 1, e.mark.column + 1},
                     "", e.msg);
        return items;
    }
    if (root.IsNull()) return items;  // an empty file is allowed
    if (!root.IsSequence()) {
        report.Error("LOAD_ERR_YAML_VALIDATE", LocationOf(file, root), "",
                     "a rules file is a list of items (- rule: ..., - signature: ..., "
                     "- list: ...)");
        return items;
    }
    for (const YAML::Node& node : root) {
        if (!node.IsMap()) {
            report.Error("LOAD_ERR_YAML_VALIDATE", LocationOf(file, node), "",
                         "each item is a mapping with one of the keys rule, signature, list");
            continue;
        }
        ItemInfo item;
        item.file = file_index;
        item.where = LocationOf(file, node);
        int kinds = 0;
        for (const auto& [key, kind] : {std::pair<const char*, ItemKind>{"rule", ItemKind::kRule},
                                        {"signature", ItemKind::kSignature},
                                        {"list", ItemKind::kList}}) {
            if (node[key]) {
                ++kinds;
                item.kind = kind;
            }
        }
        if (kinds != 1) {
            report.Error("LOAD_ERR_YAML_VALIDATE", item.where, "",
                         kinds == 0 ? "item has none of the keys rule, signature, list"
                                    : "item has more than one of the keys rule, signature, "
                                      "list");
            continue;
        }
        const char* kind_key = ItemKindName(item.kind);
        const YAML::Node name_node = node[kind_key];
        if (!name_node.IsScalar() || name_node.Scalar().empty()) {
            report.Error("LOAD_ERR_YAML_VALIDATE", LocationOf(file, name_node), "",
                         std::string(kind_key) + ": expected a non-empty name");
            continue;
        }
        item.name = name_node.Scalar();
        item.where = LocationOf(file, name_node);
        const std::string context = Context(item);
        const auto& allowed = AllowedKeys(item.kind);
        bool bad = false;
        for (const auto& kv : node) {
            const std::string key = kv.first.as<std::string>("");
            Location key_where = LocationOf(file, kv.first);
            if (!allowed.count(key)) {
                report.Error("LOAD_ERR_UNKNOWN_KEY", key_where, context,
                             "unknown key '" + key + "'" + Suggest(key, allowed) +
                                 "; expected one of: " + Join(allowed));
                bad = true;
                continue;
            }
            if (key == kind_key) continue;
            if (key == "override") {
                item.has_override = true;
                if (!kv.second.IsMap()) {
                    report.Error("LOAD_ERR_YAML_VALIDATE", LocationOf(file, kv.second), context,
                                 "override: expected a mapping of KEY: replace|append");
                    bad = true;
                    continue;
                }
                for (const auto& ov : kv.second) {
                    const std::string okey = ov.first.as<std::string>("");
                    const std::string how = ov.second.IsScalar() ? ov.second.Scalar() : "";
                    if (!allowed.count(okey) || okey == kind_key || okey == "override") {
                        report.Error("LOAD_ERR_UNKNOWN_KEY", LocationOf(file, ov.first), context,
                                     "override: unknown key '" + okey + "'");
                        bad = true;
                    } else if (how != "replace" && how != "append") {
                        report.Error("LOAD_ERR_YAML_VALIDATE", LocationOf(file, ov.second), context,
                                     "override: '" + okey + "' must be replace or append");
                        bad = true;
                    } else {
                        item.override[okey] = how;
                    }
                }
                continue;
            }
            if (key == "enabled") {
                if (!kv.second.IsScalar() ||
                    (kv.second.Scalar() != "true" && kv.second.Scalar() != "false")) {
                    report.Error("LOAD_ERR_YAML_VALIDATE", LocationOf(file, kv.second), context,
                                 "enabled: expected true or false");
                    bad = true;
                    continue;
                }
                item.enabled = kv.second.Scalar() == "true";
            }
            item.keys[key] = kv.second;
            item.key_where[key] = key_where;
        }
        for (const auto& [okey, how] : item.override) {
            if (!item.keys.count(okey)) {
                report.Error("LOAD_ERR_YAML_VALIDATE", item.where, context,
                             "override names '" + okey + "' but the item does not set it");
                bad = true;
            }
        }
        if (!bad) items.push_back(std::move(item));
    }
    return items;
}

}  // namespace autoheal::diag::internal
