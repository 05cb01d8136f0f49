// Stage 2 of rule loading: define / replace / override / enable across files, in load order.
// - An item whose name is new is defined.
// - The same name again in a later file, without `override`, replaces the earlier item whole
//   (it keeps its place in the order); twice in one file is an error.
// - With `override: {KEY: replace|append}` only those keys change; append extends lists.
// - An item that only says `enabled: false|true` switches an earlier item off or on.
#include <map>

#include "rule_loader_internal.h"

namespace autoheal::diag::internal {
namespace {

const std::set<std::string> kAppendable{"items", "actions", "suppressed_by", "escalate"};

}  // namespace

std::vector<ItemInfo> CollectItems(const std::vector<std::vector<ItemInfo>>& files,
                                   Reporter& report) {
    std::vector<ItemInfo> merged;
    std::map<std::pair<ItemKind, std::string>, std::size_t> index;
    for (const auto& items : files) {
        std::set<std::pair<ItemKind, std::string>> seen_in_file;
        for (const ItemInfo& item : items) {
            const auto key = std::make_pair(item.kind, item.name);
            const std::string context = Context(item);
            auto found = index.find(key);
            const bool only_enabled = item.keys.size() == 1 && item.keys.count("enabled");
            if (item.has_override || only_enabled) {
                if (found == index.end()) {
                    report.Error("LOAD_ERR_UNDEFINED_REF", item.where, context,
                                 std::string(item.has_override ? "override" : "enabled") + " of " +
                                     ItemKindName(item.kind) + " '" + item.name +
                                     "', which is not defined in an earlier file");
                    continue;
                }
                ItemInfo& target = merged[found->second];
                if (only_enabled && !item.has_override) {
                    target.enabled = item.enabled;
                    continue;
                }
                for (const auto& [k, how] : item.override) {
                    if (how == "append") {
                        if (!kAppendable.count(k)) {
                            report.Error("LOAD_ERR_OVERRIDE_BAD", item.key_where.at(k), context,
                                         "'" + k + "' cannot be appended to; use replace");
                            continue;
                        }
                        const YAML::Node& add = item.keys.at(k);
                        if (!add.IsSequence()) {
                            report.Error("LOAD_ERR_YAML_VALIDATE", item.key_where.at(k), context,
                                         "'" + k + "' to append must be a list");
                            continue;
                        }
                        YAML::Node combined(YAML::NodeType::Sequence);
                        auto existing = target.keys.find(k);
                        if (existing != target.keys.end() && existing->second.IsSequence()) {
                            for (const auto& v : existing->second) combined.push_back(v);
                        }
                        for (const auto& v : add) combined.push_back(v);
                        target.keys[k] = combined;
                    } else {
                        target.keys[k] = item.keys.at(k);
                    }
                    target.key_where[k] = item.key_where.at(k);
                }
                if (item.keys.count("enabled")) target.enabled = item.enabled;
                continue;
            }
            if (seen_in_file.count(key)) {
                report.Error("LOAD_ERR_DUPLICATE", item.where, context,
                             std::string(ItemKindName(item.kind)) + " '" + item.name +
                                 "' is defined twice in this file");
                continue;
            }
            seen_in_file.insert(key);
            if (found != index.end()) {
                merged[found->second] = item;  // a later file redefines it whole
            } else {
                index[key] = merged.size();
                merged.push_back(item);
            }
        }
    }
    return merged;
}

}  // namespace autoheal::diag::internal
