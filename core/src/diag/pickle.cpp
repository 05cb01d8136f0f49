// The restricted pickle reader (data_tree.h): one pass over the opcodes, a stack of node
// references, MARK positions and a memo; every opcode outside the data set is refused by name.
// Opcode numbers and argument layouts: Python's Lib/pickletools.py (protocols 0-5).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "autoheal/diag/data_tree.h"

namespace autoheal::diag {
namespace {

using Kind = DataTree::Kind;
using Ref = DataTree::Ref;

// The opcodes that import a name, call an object or fetch one from outside the stream, by
// opcode: one table lookup, so the opcode loop dispatches once.
constexpr std::array<const char*, 256> RefusedNames() {
    std::array<const char*, 256> t{};
    t['c'] = "GLOBAL";
    t[0x93] = "STACK_GLOBAL";
    t['R'] = "REDUCE";
    t['b'] = "BUILD";
    t['i'] = "INST";
    t['o'] = "OBJ";
    t[0x81] = "NEWOBJ";
    t[0x92] = "NEWOBJ_EX";
    t[0x82] = "EXT1";
    t[0x83] = "EXT2";
    t[0x84] = "EXT4";
    t['P'] = "PERSID";
    t['Q'] = "BINPERSID";
    t[0x97] = "NEXT_BUFFER";
    t[0x98] = "READONLY_BUFFER";
    return t;
}
constexpr std::array<const char*, 256> kRefused = RefusedNames();

class PickleReader {
  public:
    PickleReader(std::string_view in, const DataLimits& limits) : in_(in), limits_(limits) {}

    Result<DataTree> Run() {
        if (in_.size() > limits_.max_bytes) {
            return MakeError(ErrorCode::kInvalid,
                             "larger than " + std::to_string(limits_.max_bytes) + " bytes");
        }
        // A flight recorder dump of N bytes builds about N/8 values, N/3 item slots and N/24
        // containers (counted on dumps laid out as PyTorch 2.x writes them, gen_dumps.py); the
        // vectors grow past a wrong guess.
        const std::size_t cap = std::min(limits_.max_nodes, std::size_t{1} << 22);
        tree_.Reserve(std::min(in_.size() / 8, cap), std::min(in_.size() / 3, cap),
                      std::min(in_.size() / 24, cap));
        while (pos_ < in_.size()) {
            const std::size_t at = pos_;
            const auto op = static_cast<unsigned char>(in_[pos_++]);
            if (op == '.') {
                if (stack_.size() != 1 || !marks_.empty()) return Fail(at, "STOP with a bad stack");
                tree_.Finish(stack_.back());
                return std::move(tree_);
            }
            if (!Step(op, at)) return MakeError(ErrorCode::kInvalid, error_);
        }
        return MakeError(ErrorCode::kInvalid, "truncated: no STOP opcode");
    }

  private:
    Error Fail(std::size_t at, const std::string& why) {
        return MakeError(ErrorCode::kInvalid, why + " at byte " + std::to_string(at));
    }
    // Out of the opcode loop's way: the loop only passes a pointer.
    [[gnu::noinline, gnu::cold]] bool Bad(std::size_t at, std::string_view why) {
        error_ = std::string(why) + " at byte " + std::to_string(at);
        return false;
    }
    [[gnu::noinline, gnu::cold]] bool BadNumber(std::size_t at, const char* what, std::uint64_t n) {
        return Bad(at, what + std::to_string(n));
    }

    bool Take(std::size_t n, std::string_view* out) {
        if (in_.size() - pos_ < n) return false;
        *out = in_.substr(pos_, n);
        pos_ += n;
        return true;
    }
    bool Line(std::string_view* out) {
        const std::size_t nl = in_.find('\n', pos_);
        if (nl == std::string_view::npos) return false;
        *out = in_.substr(pos_, nl - pos_);
        pos_ = nl + 1;
        return true;
    }
    bool Uint(std::size_t n, std::uint64_t* v) {
        std::string_view b;
        if (!Take(n, &b)) return false;
        *v = 0;
        for (std::size_t k = n; k-- > 0;) *v = (*v << 8) | static_cast<unsigned char>(b[k]);
        return true;
    }

    bool Room(std::size_t at) {
        return tree_.size() < std::min(limits_.max_nodes, DataTree::kMaxNodes) ||
               Bad(at, "more than the node limit");
    }
    bool PushInt(std::int64_t v, std::size_t at) {
        if (!DataTree::IntFitsInline(v) && !Room(at)) return false;
        stack_.push_back(tree_.AddInt(v));
        return true;
    }
    bool PushBool(bool b, std::size_t at) {
        if (!Room(at)) return false;
        stack_.push_back(tree_.AddScalar(Kind::kBool, b ? 1 : 0));
        return true;
    }
    bool PushFloat(double f, std::size_t at) {
        if (!Room(at)) return false;
        stack_.push_back(tree_.AddFloat(f));
        return true;
    }
    bool PushString(std::string_view s, Kind kind, std::size_t at) {
        if (!Room(at)) return false;
        stack_.push_back(tree_.AddString(kind, s));
        return true;
    }
    bool PushEmpty(Kind kind, std::size_t at) {
        if (!Room(at)) return false;
        stack_.push_back(kind == Kind::kNone ? tree_.AddScalar(kind, 0) : tree_.AddContainer(kind));
        return true;
    }
    // Pops the topmost MARK: *m is where the items above it start on the stack.
    bool PopMark(std::size_t* m, std::size_t at) {
        if (marks_.empty()) return Bad(at, "no MARK");
        *m = marks_.back();
        marks_.pop_back();
        return true;
    }
    bool Top(std::size_t n, std::size_t at) {
        const std::size_t floor = marks_.empty() ? 0 : marks_.back();
        if (stack_.size() < floor + n) return Bad(at, "stack underflow");
        return true;
    }
    // Adds the stack's items from `first` on to `target`, and drops them from the stack.
    bool Append(Ref target, std::size_t first, std::size_t at) {
        const std::size_t n = stack_.size() - first;
        const Kind kind = tree_.kind(target);
        if (kind != Kind::kList && kind != Kind::kDict) {
            return Bad(at, "items added to a value that is not a list, set or dict");
        }
        if (kind == Kind::kDict && n % 2 != 0) return Bad(at, "odd number of dict items");
        if (tree_.items() + n > limits_.max_nodes) return Bad(at, "more than the item limit");
        tree_.AddItems(target, stack_.data() + first, n);
        stack_.resize(first);
        return true;
    }
    // APPENDS, SETITEMS, ADDITEMS: the items above the MARK, to the value below it.
    bool AppendMarked(std::size_t at) {
        std::size_t m = 0;
        if (!PopMark(&m, at)) return false;
        const std::size_t floor = marks_.empty() ? 0 : marks_.back();
        if (m < floor + 1) return Bad(at, "stack underflow");
        return Append(stack_[m - 1], m, at);
    }
    // A new container of the stack's items from `first` on, in their place on the stack.
    bool Collect(Kind kind, std::size_t first, std::size_t at) {
        if (!Room(at)) return false;
        const Ref r = tree_.AddContainer(kind);
        if (!Append(r, first, at)) return false;
        stack_.push_back(r);
        return true;
    }
    // LIST, TUPLE, FROZENSET, DICT: the items above the MARK.
    bool CollectMarked(Kind kind, std::size_t at) {
        std::size_t m = 0;
        return PopMark(&m, at) && Collect(kind, m, at);
    }
    // Picklers number the memo 0, 1, 2, ...: a vector, with a map for indexes far past its end.
    // memo_count_ is how many indexes are set (MEMOIZE's index, as Python's len(memo)).
    bool Memo(std::uint64_t index, std::size_t at) {
        if (!Top(1, at)) return false;
        if (index == memo_.size() && index < limits_.max_memo) {
            memo_.push_back(stack_.back());
            ++memo_count_;
            return true;
        }
        if (index < memo_.size() + 1024 && index < limits_.max_memo) {
            if (index >= memo_.size()) memo_.resize(index + 1, kUnset);
            memo_count_ += memo_[index] == kUnset ? 1 : 0;
            memo_[index] = stack_.back();
            return true;
        }
        const bool known = sparse_memo_.count(index) != 0;
        if (!known && sparse_memo_.size() >= limits_.max_memo) {
            return Bad(at, "more than the memo limit");
        }
        memo_count_ += known ? 0 : 1;
        sparse_memo_[index] = stack_.back();
        return true;
    }
    bool Get(std::uint64_t index, std::size_t at) {
        if (index < memo_.size() && memo_[index] != kUnset) {
            stack_.push_back(memo_[index]);
            return true;
        }
        auto it = sparse_memo_.find(index);
        if (it == sparse_memo_.end()) return BadNumber(at, "memo not set: ", index);
        stack_.push_back(it->second);
        return true;
    }

    // FLOAT's text (at most 64 bytes): strtod, as Python's float() reads repr.
    [[gnu::noinline]] static double FloatText(std::string_view s) {
        return std::strtod(std::string(s).c_str(), nullptr);
    }
    static bool Decimal(std::string_view s, std::int64_t* v) {
        if (!s.empty() && s.back() == 'L') s.remove_suffix(1);
        bool neg = false;
        if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
            neg = s.front() == '-';
            s.remove_prefix(1);
        }
        if (s.empty() || s.size() > 18) return false;
        std::int64_t out = 0;
        for (char c : s) {
            if (c < '0' || c > '9') return false;
            out = out * 10 + (c - '0');
        }
        *v = neg ? -out : out;
        return true;
    }
    // LONG1/LONG4: little-endian two's complement, at most 8 bytes here.
    bool LongBytes(std::size_t n, std::size_t at) {
        if (n > 8) return Bad(at, "an integer beyond 64 bits");
        std::uint64_t u = 0;
        if (!Uint(n, &u)) return Bad(at, "truncated");
        std::int64_t v = static_cast<std::int64_t>(u);
        if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1)
            v -= static_cast<std::int64_t>(1ull << (8 * n));
        return PushInt(v, at);
    }
    bool Sized(std::size_t len_bytes, Kind kind, std::size_t at) {
        std::uint64_t n = 0;
        std::string_view s;
        if (!Uint(len_bytes, &n) || n > in_.size() - pos_ || !Take(n, &s)) {
            return Bad(at, "truncated");
        }
        return PushString(s, kind, at);
    }
    // TUPLE1..3: the top n items.
    bool Tuple(std::size_t n, std::size_t at) {
        return Top(n, at) && Collect(Kind::kList, stack_.size() - n, at);
    }
    // An opcode outside the data set: one that imports or calls, or none at all.
    [[gnu::noinline, gnu::cold]] bool Unknown(unsigned char op, std::size_t at) {
        char code[8];
        std::snprintf(code, sizeof code, "0x%02x", op);
        if (kRefused[op] == nullptr) return Bad(at, std::string("unknown opcode ") + code);
        error_ = std::string("opcode ") + kRefused[op] + " (" + code + ") at byte " +
                 std::to_string(at) + " imports or calls: refused";
        return false;
    }

    bool Step(unsigned char op, std::size_t at);

    std::string_view in_;
    const DataLimits& limits_;
    std::size_t pos_ = 0;
    DataTree tree_;
    std::vector<Ref> stack_;
    std::vector<std::size_t> marks_;
    static constexpr Ref kUnset = ~Ref{0};
    std::vector<Ref> memo_;
    std::uint64_t memo_count_ = 0;
    std::unordered_map<std::uint64_t, Ref> sparse_memo_;
    std::string error_;
};

bool PickleReader::Step(unsigned char op, std::size_t at) {
    std::string_view arg;
    std::uint64_t u = 0;
    std::int64_t v = 0;
    switch (op) {
        case 0x80:  // PROTO
            return Uint(1, &u) ? (u <= 5 || BadNumber(at, "protocol ", u)) : Bad(at, "truncated");
        case 0x95:  // FRAME: the frame's length; its opcodes follow inline
            return Uint(8, &u) || Bad(at, "truncated");
        case '(':  // MARK
            if (marks_.size() >= limits_.max_depth) return Bad(at, "MARKs nested too deep");
            marks_.push_back(stack_.size());
            return true;
        case '0':  // POP
            if (!Top(1, at)) return false;
            stack_.pop_back();
            return true;
        case '1': {  // POP_MARK
            std::size_t m = 0;
            if (!PopMark(&m, at)) return false;
            stack_.resize(m);
            return true;
        }
        case '2':  // DUP
            if (!Top(1, at)) return false;
            stack_.push_back(stack_.back());
            return true;
        case 'N':
            return PushEmpty(Kind::kNone, at);
        case 0x88:
        case 0x89:  // NEWTRUE, NEWFALSE
            return PushBool(op == 0x88, at);
        case 'I':  // INT: decimal text, or 00/01 for False/True
            if (!Line(&arg)) return Bad(at, "truncated");
            if (arg == "00" || arg == "01") return PushBool(arg == "01", at);
            return Decimal(arg, &v) ? PushInt(v, at) : Bad(at, "bad INT");
        case 'L':  // LONG: decimal text with an L
            if (!Line(&arg)) return Bad(at, "truncated");
            return Decimal(arg, &v) ? PushInt(v, at) : Bad(at, "bad LONG");
        case 'J':  // BININT: 4 bytes signed
            if (!Uint(4, &u)) return Bad(at, "truncated");
            return PushInt(static_cast<std::int32_t>(static_cast<std::uint32_t>(u)), at);
        case 'K':  // BININT1
        case 'M':  // BININT2
            if (!Uint(op == 'K' ? 1 : 2, &u)) return Bad(at, "truncated");
            return PushInt(static_cast<std::int64_t>(u), at);
        case 0x8a:  // LONG1
            if (!Uint(1, &u)) return Bad(at, "truncated");
            return LongBytes(u, at);
        case 0x8b:  // LONG4
            if (!Uint(4, &u)) return Bad(at, "truncated");
            return LongBytes(u, at);
        case 'F':  // FLOAT: text
            if (!Line(&arg) || arg.size() > 64) return Bad(at, "bad FLOAT");
            return PushFloat(FloatText(arg), at);
        case 'G': {  // BINFLOAT: 8 bytes big-endian
            if (!Take(8, &arg)) return Bad(at, "truncated");
            std::uint64_t bits = 0;
            for (char c : arg) bits = (bits << 8) | static_cast<unsigned char>(c);
            double f = 0;
            std::memcpy(&f, &bits, sizeof f);
            return PushFloat(f, at);
        }
        case 'S':  // STRING: a quoted repr, kept without its quotes
            if (!Line(&arg)) return Bad(at, "truncated");
            if (arg.size() >= 2 && (arg.front() == '\'' || arg.front() == '"') &&
                arg.back() == arg.front()) {
                arg = arg.substr(1, arg.size() - 2);
            }
            return PushString(arg, Kind::kString, at);
        case 'V':  // UNICODE: raw-unicode-escape text, kept as written
            if (!Line(&arg)) return Bad(at, "truncated");
            return PushString(arg, Kind::kString, at);
        case 'T':  // BINSTRING
        case 'X':  // BINUNICODE
            return Sized(4, Kind::kString, at);
        case 'U':   // SHORT_BINSTRING
        case 0x8c:  // SHORT_BINUNICODE
            return Sized(1, Kind::kString, at);
        case 0x8d:  // BINUNICODE8
            return Sized(8, Kind::kString, at);
        case 'B':  // BINBYTES
            return Sized(4, Kind::kBytes, at);
        case 'C':  // SHORT_BINBYTES
            return Sized(1, Kind::kBytes, at);
        case 0x8e:  // BINBYTES8
        case 0x96:  // BYTEARRAY8
            return Sized(8, Kind::kBytes, at);
        case ']':   // EMPTY_LIST
        case 0x8f:  // EMPTY_SET
        case ')':   // EMPTY_TUPLE
            return PushEmpty(Kind::kList, at);
        case '}':  // EMPTY_DICT
            return PushEmpty(Kind::kDict, at);
        case 'a':  // APPEND
            if (!Top(2, at)) return false;
            return Append(stack_[stack_.size() - 2], stack_.size() - 1, at);
        case 's':  // SETITEM
            if (!Top(3, at)) return false;
            return Append(stack_[stack_.size() - 3], stack_.size() - 2, at);
        case 'e':   // APPENDS
        case 'u':   // SETITEMS
        case 0x90:  // ADDITEMS
            return AppendMarked(at);
        case 'l':   // LIST
        case 't':   // TUPLE
        case 0x91:  // FROZENSET
            return CollectMarked(Kind::kList, at);
        case 'd':  // DICT
            return CollectMarked(Kind::kDict, at);
        case 0x85:
        case 0x86:
        case 0x87:  // TUPLE1..3
            return Tuple(op - 0x84, at);
        case 'p':  // PUT: decimal text
            if (!Line(&arg) || !Decimal(arg, &v) || v < 0) return Bad(at, "bad PUT");
            return Memo(static_cast<std::uint64_t>(v), at);
        case 'q':
        case 'r':  // BINPUT, LONG_BINPUT
            if (!Uint(op == 'q' ? 1 : 4, &u)) return Bad(at, "truncated");
            return Memo(u, at);
        case 0x94:  // MEMOIZE
            return Memo(memo_count_, at);
        case 'g':  // GET: decimal text
            if (!Line(&arg) || !Decimal(arg, &v) || v < 0) return Bad(at, "bad GET");
            return Get(static_cast<std::uint64_t>(v), at);
        case 'h':
        case 'j':  // BINGET, LONG_BINGET
            if (!Uint(op == 'h' ? 1 : 4, &u)) return Bad(at, "truncated");
            return Get(u, at);
        default:
            return Unknown(op, at);
    }
}

}  // namespace

Result<DataTree> ReadPickle(std::string_view bytes, const DataLimits& limits) {
    return PickleReader(bytes, limits).Run();
}

}  // namespace autoheal::diag
