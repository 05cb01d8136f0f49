// Data written by another program (a PyTorch flight-recorder dump), read as plain data: a tree of
// None, bools, ints, floats, strings, bytes, lists and dicts, held in one arena. Two readers fill
// it: a restricted reader of Python's pickle protocol (0-5) that accepts only the opcodes that
// build data and refuses every opcode that imports or calls (GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
// INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID, out-of-band buffers), and a JSON
// reader. Never Python's unpickler: nothing read here runs code.
//
// Bounded: the input size, the number of nodes and of container items, the memo and the nesting
// a caller walks are capped (DataLimits), and the tree owns every node, so a memo that makes a
// list contain itself neither leaks nor loops (walkers bound their depth).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::diag {

struct DataLimits {
    std::size_t max_bytes = std::size_t{256} << 20;  // the input
    std::size_t max_nodes = 16'000'000;              // values built (< kMaxNodes); items
    std::size_t max_memo = 4'000'000;                // pickle memo slots
    std::size_t max_depth = 64;                      // JSON nesting, pickle MARK nesting
};

class DataTree {
  public:
    enum class Kind : std::uint8_t { kNone, kBool, kInt, kFloat, kString, kBytes, kList, kDict };
    using Ref = std::uint32_t;
    using Items = std::span<const Ref>;  // kList (lists, tuples, sets)
    // kDict: its (key, value) pairs in the order written.
    class Map {
      public:
        class iterator {
          public:
            explicit iterator(const Ref* p) : p_(p) {}
            std::pair<Ref, Ref> operator*() const { return {p_[0], p_[1]}; }
            iterator& operator++() {
                p_ += 2;
                return *this;
            }
            bool operator==(const iterator&) const = default;

          private:
            const Ref* p_;
        };
        Map() = default;
        explicit Map(std::span<const Ref> refs) : refs_(refs) {}
        iterator begin() const { return iterator(refs_.data()); }
        iterator end() const { return iterator(refs_.data() + refs_.size()); }
        std::size_t size() const { return refs_.size() / 2; }
        bool empty() const { return refs_.empty(); }

      private:
        std::span<const Ref> refs_;
    };

    // An int of 31 bits is held in its reference (this bit set), not in a node: most of a dump's
    // values are such counters and sizes.
    static constexpr Ref kInlineInt = Ref{1} << 31;
    static constexpr std::size_t kMaxNodes = kInlineInt;

    Ref root() const { return root_; }
    std::size_t size() const { return nodes_.size(); }  // nodes (ints held inline are none)
    Kind kind(Ref r) const { return (r & kInlineInt) != 0 ? Kind::kInt : nodes_[r].kind; }
    // kInt and kBool (0/1); 0 for other kinds (an int beyond 64 bits is refused by the readers).
    std::int64_t Int(Ref r) const {
        if ((r & kInlineInt) != 0) return static_cast<std::int32_t>(r << 1) >> 1;
        return kind(r) == Kind::kInt || kind(r) == Kind::kBool ? nodes_[r].value : 0;
    }
    double Float(Ref r) const;
    // kString (UTF-8 as written) and kBytes; empty for other kinds.
    std::string_view Str(Ref r) const;
    // kList's items, kDict's pairs; empty for other kinds.
    Items ItemsOf(Ref r) const;
    Map MapOf(Ref r) const;

    // The value of `key` (a string) in the dict `dict`; false when it is no dict or lacks it.
    bool Find(Ref dict, std::string_view key, Ref* value) const;

    // Builders, for the readers. A string is copied into the tree.
    static bool IntFitsInline(std::int64_t v) { return v >= -(1 << 30) && v < (1 << 30); }
    Ref AddInt(std::int64_t value);  // no node when IntFitsInline
    Ref AddScalar(Kind kind, std::int64_t value);
    Ref AddFloat(double value);
    Ref AddString(Kind kind, std::string_view s);
    Ref AddContainer(Kind kind);  // kList or kDict, empty
    // Adds items to a container, after those added before (a dict's as key, value, key, value).
    // A reader adds to containers in any order (a pickle fills several at once), so the items
    // are kept as runs in the order added, and Finish puts the runs of each container together.
    void AddItems(Ref container, const Ref* items, std::size_t n);
    std::size_t items() const { return items_added_; }
    // After the last AddItems: each container's items in one place, and the root.
    void Finish(Ref root);
    // Room for what a reader expects to build (a guess from the input's size).
    void Reserve(std::size_t nodes, std::size_t items, std::size_t containers);

  private:
    // 16 bytes a value: one dump holds hundreds of thousands of them.
    struct Node {
        Kind kind = Kind::kNone;
        std::uint32_t aux = 0;   // a string's length; a container's index in its spans
        std::int64_t value = 0;  // an int or bool; a float's bits; a string's offset in strings_
    };
    struct Span {
        std::uint32_t first = 0;  // in refs_
        std::uint32_t count = 0;  // refs (a dict's: twice its pairs)
        std::uint32_t runs = 0;
        std::uint32_t last = 0;  // the newest run's header in refs_
    };
    std::vector<Node> nodes_;
    std::string strings_;
    // Runs of [the container's run before (its header's offset), n, item...] as added. Most
    // containers are filled by one run, and their span points at it; Finish copies the runs of
    // the others (`split_`: dict?, span index) to the end of refs_.
    std::vector<Ref> refs_;
    std::size_t items_added_ = 0;
    std::vector<Span> list_spans_;
    std::vector<Span> dict_spans_;
    std::vector<std::pair<bool, std::uint32_t>> split_;
    Ref root_ = 0;
};

// A pickle (protocol 0 to 5). Errors name the opcode and its offset
// ("opcode GLOBAL (0x63) at byte 2 imports or calls: refused").
Result<DataTree> ReadPickle(std::string_view bytes, const DataLimits& limits = {});

// A JSON document (nesting checked before it is parsed).
Result<DataTree> ReadJsonData(std::string_view text, const DataLimits& limits = {});

}  // namespace autoheal::diag
