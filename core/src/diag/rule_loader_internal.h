// Shared by the three loader stages. Not part of the public API.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "autoheal/diag/rules.h"

namespace autoheal::diag::internal {

struct SourceFile {
    std::string name;
    std::string text;
    std::vector<std::string> lines;
};

// Where messages go; builds snippets from the source files.
class Reporter {
  public:
    explicit Reporter(const std::vector<SourceFile>* files, LoadResult* result)
        : files_(files), result_(result) {}
    void Error(const std::string& code, const Location& where, const std::string& context,
               const std::string& message);
    void Warning(const std::string& code, const Location& where, const std::string& context,
                 const std::string& message);
    bool HasErrors() const { return !result_->ok(); }

  private:
    void Add(Severity severity, const std::string& code, const Location& where,
             const std::string& context, const std::string& message);
    const std::vector<SourceFile>* files_;
    LoadResult* result_;
};

Location LocationOf(const SourceFile& file, const YAML::Node& node);

enum class ItemKind { kSignature, kList, kRule };
const char* ItemKindName(ItemKind kind);

// One item of a rules file as read, before any merging.
struct ItemInfo {
    ItemKind kind = ItemKind::kRule;
    std::string name;
    Location where;
    std::size_t file = 0;
    std::map<std::string, YAML::Node> keys;       // every key but the kind key and override
    std::map<std::string, Location> key_where;    // location of each key
    std::map<std::string, std::string> override;  // key -> "replace" | "append"
    bool has_override = false;
    bool enabled = true;
};

// Stage 1: YAML text -> items. Reports syntax errors, wrong shapes and unknown keys.
std::vector<ItemInfo> ReadItems(const SourceFile& file, std::size_t file_index, Reporter& report);

// Stage 2: apply define / replace / override / enable in load order.
std::vector<ItemInfo> CollectItems(const std::vector<std::vector<ItemInfo>>& files,
                                   Reporter& report);

// Stage 3: validate and build the rule set.
std::optional<RuleSet> CompileItems(const std::vector<ItemInfo>& items,
                                    const std::vector<SourceFile>& files, Reporter& report);

std::string Context(const ItemInfo& item);

}  // namespace autoheal::diag::internal
