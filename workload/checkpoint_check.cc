#include "workload/checkpoint_check.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>

#include "common/error.h"
#include "common/regular_file.h"

namespace tpb {

namespace {

// Limits no checkpoint of tpbench's comes near; each keeps a hostile file from costing much.
constexpr std::uint64_t kMaxEntries = 100000;
constexpr std::uint64_t kMaxPickleBytes = 64ull << 20;
constexpr std::size_t kMaxNameBytes = 1024;
constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxDims = 32;

class Where {
 public:
  Where(const std::string& label, const std::string& name) : label_(label), name_(name) {}
  [[noreturn]] void bad(const std::string& why) const { TPB_THROW(UsageError, label_ << " " << name_ << ": " << why); }

 private:
  const std::string& label_;
  const std::string& name_;
};

std::uint64_t le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// ---- zip ----------------------------------------------------------------------------------------

constexpr std::uint64_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50,
                        kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;

struct Entry {
  std::string name;               // without "<archive>/"
  std::uint64_t header = 0;       // offset of the local header
  std::uint64_t data = 0, size = 0;
  std::uint64_t flags = 0;
};

struct Zip {
  const unsigned char* p;
  std::uint64_t size;
  const Where& where;
  std::string archive;
  std::map<std::string, Entry> entries;

  // n bytes at `offset`, all inside the file.
  const unsigned char* at(std::uint64_t offset, std::uint64_t n, const char* what) const {
    if (offset > size || n > size - offset)
      where.bad(std::string("zip ") + what + " at offset " + std::to_string(offset) + " runs past the end of the file");
    return p + offset;
  }
};

struct Directory {
  std::uint64_t offset, size, count, end;  // end: where the end records start
};

// The zip64 end record miniz writes before the classic one; `d` is the classic record's view.
Directory zip64Directory(const Zip& z, const Directory& d) {
  const unsigned char* l = z.at(d.end - 20, 20, "zip64 locator");
  const std::uint64_t rec = le(l + 8, 8);
  if (le(l + 4, 4) != 0 || le(l + 16, 4) != 1 || rec > d.end - 20 || d.end - 20 - rec != 56)
    z.where.bad("zip64 locator does not point at a zip64 end record just before it");
  const unsigned char* r = z.at(rec, 56, "zip64 end record");
  if (le(r, 4) != kEnd64Sig || le(r + 4, 8) != 44 || le(r + 16, 4) != 0 || le(r + 20, 4) != 0 ||
      le(r + 24, 8) != le(r + 32, 8))
    z.where.bad("zip64 end record is damaged or spans several disks");
  const Directory d64{le(r + 48, 8), le(r + 40, 8), le(r + 32, 8), rec};
  // The classic record holds each value, or its all-ones "see zip64" mark.
  if ((d.count != 0xFFFF && d.count != d64.count) || (d.size != 0xFFFFFFFF && d.size != d64.size) ||
      (d.offset != 0xFFFFFFFF && d.offset != d64.offset))
    z.where.bad("zip64 and classic end records disagree");
  return d64;
}

Directory findDirectory(const Zip& z) {
  const char* notZip = "not a zip archive (no end record at its end: truncated, or not a file torch.save wrote)";
  if (z.size < 22) z.where.bad(notZip);
  const unsigned char* e = z.p + z.size - 22;
  if (le(e, 4) != kEndSig) z.where.bad(notZip);
  if (le(e + 4, 2) != 0 || le(e + 6, 2) != 0 || le(e + 8, 2) != le(e + 10, 2) || le(e + 20, 2) != 0)
    z.where.bad("zip spans several disks or has a comment (torch.save writes neither)");
  Directory d{le(e + 16, 4), le(e + 12, 4), le(e + 10, 2), z.size - 22};
  if (d.end >= 20 && le(z.p + d.end - 20, 4) == kLocator64Sig) d = zip64Directory(z, d);
  if (d.offset > d.end || d.size != d.end - d.offset)
    z.where.bad("zip central directory is not where its end record says");
  if (d.count > kMaxEntries) z.where.bad("zip has " + std::to_string(d.count) + " entries, more than a checkpoint's");
  return d;
}

// Sizes and offset from a zip64 extra field, for those the central header marks all-ones.
void zip64Extra(const Zip& z, const unsigned char* x, std::uint64_t n, std::uint64_t* fields[3]) {
  for (std::uint64_t i = 0; i + 4 <= n;) {
    const std::uint64_t id = le(x + i, 2), len = le(x + i + 2, 2);
    if (len > n - i - 4) z.where.bad("zip extra field runs past its header");
    std::uint64_t used = 0;
    for (int f = 0; f < 3 && id == 1; ++f) {
      if (*fields[f] != 0xFFFFFFFF) continue;
      if (used + 8 > len) z.where.bad("zip64 extra field is too short");
      *fields[f] = le(x + i + 4 + used, 8);
      used += 8;
    }
    i += 4 + len;
  }
}

// "<archive>/<rest>": relative, no empty, "." or ".." component, no NUL or backslash, one archive.
std::string relativeName(Zip& z, const std::string& name) {
  const std::size_t slash = name.find('/');
  bool ok = !name.empty() && name.size() <= kMaxNameBytes && slash != std::string::npos &&
            name.find('\0') == std::string::npos && name.find('\\') == std::string::npos;
  for (std::size_t b = 0; ok && b <= name.size();) {
    const std::size_t e = std::min(name.find('/', b), name.size());
    const std::string part = name.substr(b, e - b);
    ok = !part.empty() && part != "." && part != "..";
    b = e + 1;
  }
  if (!ok) z.where.bad("zip entry name '" + name.substr(0, 80) + "' is not a path inside one archive folder");
  const std::string top = name.substr(0, slash);
  if (z.archive.empty()) z.archive = top;
  if (top != z.archive) z.where.bad("zip entries lie under two folders, '" + z.archive + "' and '" + top + "'");
  return name.substr(slash + 1);
}

// One central directory entry at `pos` (advanced past it).
Entry centralEntry(Zip& z, std::uint64_t& pos, std::uint64_t end) {
  if (end - pos < 46) z.where.bad("zip central directory is cut short");
  const unsigned char* c = z.p + pos;
  if (le(c, 4) != kCentralSig)
    z.where.bad("zip central directory entry at offset " + std::to_string(pos) + " is damaged");
  const std::uint64_t nameLen = le(c + 28, 2), extraLen = le(c + 30, 2);
  if (end - pos - 46 < nameLen + extraLen || le(c + 32, 2) != 0)
    z.where.bad("zip central directory entry runs past it");
  Entry e;
  const std::string full(reinterpret_cast<const char*>(c + 46), nameLen);
  e.flags = le(c + 8, 2);
  std::uint64_t csize = le(c + 20, 4), usize = le(c + 24, 4);
  e.header = le(c + 42, 4);
  std::uint64_t* fields[3] = {&usize, &csize, &e.header};
  zip64Extra(z, c + 46 + nameLen, extraLen, fields);
  if ((e.flags & ~std::uint64_t{0x0808}) != 0 || le(c + 10, 2) != 0 || csize != usize || le(c + 34, 2) != 0)
    z.where.bad("zip entry '" + full.substr(0, 80) +
                "' is compressed, encrypted or on another disk (torch.save stores entries as they are)");
  e.size = usize;
  e.name = relativeName(z, full);
  pos += 46 + nameLen + extraLen;
  return e;
}

// The local header of `e` agrees with its central one; its data lies before `limit`.
void checkLocal(const Zip& z, Entry& e, std::uint64_t limit) {
  const unsigned char* l = z.at(e.header, 30, "local header");
  const std::uint64_t nameLen = le(l + 26, 2), extraLen = le(l + 28, 2);
  const std::string full = z.archive + "/" + e.name;
  if (le(l, 4) != kLocalSig || le(l + 6, 2) != e.flags || le(l + 8, 2) != 0 || nameLen != full.size() ||
      full.compare(0, std::string::npos, reinterpret_cast<const char*>(z.at(e.header + 30, nameLen, "entry name")),
                   nameLen) != 0)
    z.where.bad("zip entry '" + full + "': its local header does not match the central directory");
  e.data = e.header + 30 + nameLen + extraLen;
  if (e.data > limit || e.size > limit - e.data)
    z.where.bad("zip entry '" + full + "': its " + std::to_string(e.size) + " bytes run into the central directory");
}

// What torch 1.13's writer puts in a checkpoint and nothing else.
bool knownRecord(const std::string& name) {
  if (name == "data.pkl" || name == "version" || name == ".data/version" || name == "byteorder") return true;
  if (name.rfind("data/", 0) != 0 || name.size() == 5 || name.size() > 5 + 20) return false;
  return std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void readZip(Zip& z) {
  const Directory d = findDirectory(z);
  std::vector<Entry> byOffset;
  std::uint64_t pos = d.offset;
  for (std::uint64_t i = 0; i < d.count; ++i) {
    Entry e = centralEntry(z, pos, d.end);
    checkLocal(z, e, d.offset);
    if (!knownRecord(e.name)) z.where.bad("zip entry '" + z.archive + "/" + e.name + "' is not one a checkpoint has");
    if (!z.entries.emplace(e.name, e).second)
      z.where.bad("zip has two entries named '" + z.archive + "/" + e.name + "'");
    byOffset.push_back(e);
  }
  if (pos != d.end) z.where.bad("zip central directory holds more than its end record counts");
  std::sort(byOffset.begin(), byOffset.end(), [](const Entry& a, const Entry& b) { return a.header < b.header; });
  for (std::size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i - 1].data + byOffset[i - 1].size > byOffset[i].header)
      z.where.bad("zip entries '" + byOffset[i - 1].name + "' and '" + byOffset[i].name + "' overlap");
  for (const char* must : {"data.pkl", "version"})
    if (!z.entries.count(must)) z.where.bad(std::string("zip has no '") + must + "' entry: not a torch.save file");
  const Entry& v = z.entries.at("version");
  const std::string version(reinterpret_cast<const char*>(z.p + v.data), v.size);
  const std::size_t digits = version.find_first_not_of("0123456789");
  if (version.empty() || digits == 0 || version.size() > 8 ||
      (digits != std::string::npos && version.substr(digits) != "\n"))
    z.where.bad("zip 'version' entry is not a version number");
}

// ---- pickle -------------------------------------------------------------------------------------

enum class Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Tensor, Storage, Global };
enum class Callable { RebuildTensor, OrderedDict, StorageType, TypeTag, IntList };

// The type tags LibTorch's pickler puts on tpbench's dicts and lists (torch.jit._pickle's
// restore_type_tag), with the kinds their keys or items must have. LibTorch parses the tag as a
// TorchScript type: only these three reach it.
struct TypeTag {
  const char* tag;
  Kind container, element;
};
constexpr TypeTag kTypeTags[] = {
    {"Dict[str, Any]", Kind::Dict, Kind::Str},
    {"Dict[int, Any]", Kind::Dict, Kind::Int},
    {"List[Any]", Kind::List, Kind::None}};

// A list or dict: mutable while on the stack, sealed once inside another container (so the depth
// its parents computed stays true, and nothing can come to contain itself).
struct Box {
  int depth = 1;
  unsigned kinds = 0;  // bit per Kind of a list's items or a dict's keys
  bool sealed = false;
};

struct Value {
  Kind kind = Kind::None;
  std::int64_t i = 0;  // Int, Bool; Global: its Callable; Storage: numel
  int elem = 0;        // Storage and StorageType: element bytes
  int depth = 0;       // Tuple: its nesting
  bool raw = false;    // a Global or Storage, or a tuple holding one: operands, never data
  bool hooks = false;  // OrderedDict(): None to LibTorch, which reads it only as a tensor's hooks
  std::shared_ptr<const std::string> s;
  std::shared_ptr<const std::vector<Value>> items;
  std::shared_ptr<Box> box;
  std::size_t start = 0;  // where in data.pkl the opcodes that built it begin
  int nesting() const { return box ? box->depth : depth; }
};

struct StorageType {
  const char* name;
  int bytes;
};
constexpr StorageType kStorageTypes[] = {{"FloatStorage", 4}, {"DoubleStorage", 8}, {"HalfStorage", 2},
                                         {"BFloat16Storage", 2}, {"LongStorage", 8}, {"IntStorage", 4},
                                         {"ShortStorage", 2}, {"CharStorage", 1}, {"ByteStorage", 1},
                                         {"BoolStorage", 1}};

// Runs data.pkl's opcodes on a model of the unpickler's stack that keeps only what the checks
// need: kinds, tuples' items, ints, strings, containers' depth.
// A change to data.pkl that LibTorch 1.13's unpickler needs to read what Python's pickler wrote:
// at `pos`, `skip` bytes become `bytes`.
struct Edit {
  std::size_t pos;
  int order;  // at one position: the MARK inserted before the opcode replaced there
  std::string bytes;
  std::size_t skip;
};

class PickleChecker {
 public:
  PickleChecker(const Zip& zip, const Entry& pkl) : zip_(zip), where_(zip.where), p_(zip.p + pkl.data), n_(pkl.size) {}

  // data.pkl with edits_ applied: "" when it needs none (tpbench's own files).
  std::string rewritten() {
    if (edits_.empty()) return "";
    std::sort(edits_.begin(), edits_.end(),
              [](const Edit& a, const Edit& b) { return a.pos != b.pos ? a.pos < b.pos : a.order < b.order; });
    std::string out;
    std::size_t at = 0;
    for (const Edit& e : edits_) {
      out.append(reinterpret_cast<const char*>(p_ + at), e.pos - at);
      out += e.bytes;
      at = e.pos + e.skip;
    }
    return out.append(reinterpret_cast<const char*>(p_ + at), n_ - at);
  }

  std::size_t run() {
    if (n_ > kMaxPickleBytes) where_.bad("data.pkl is " + std::to_string(n_) + " bytes, more than a checkpoint's");
    const unsigned char* proto = take(2);
    if (proto[0] != 0x80 || proto[1] != 2) where_.bad("data.pkl is not a protocol 2 pickle (what torch.save writes)");
    while (pos_ < n_) {
      opStart_ = pos_;
      const unsigned char op = *take(1);
      if (op == '.') return stop();
      if (!literal(op) && !structure(op)) where_.bad(opName(op) + " at byte " + std::to_string(pos_ - 1) +
                                                     " of data.pkl is not an opcode torch.save uses in a checkpoint");
    }
    where_.bad("data.pkl ends without STOP (cut short)");
  }

 private:
  [[noreturn]] void bad(const std::string& why) const { where_.bad("data.pkl: " + why); }

  static std::string opName(unsigned char op) {
    static const char* hex = "0123456789abcdef";
    return std::string("opcode 0x") + hex[op >> 4] + hex[op & 15];
  }

  const unsigned char* take(std::size_t k) {
    if (k > n_ - pos_) bad("an operand runs past the end (cut short)");
    const unsigned char* q = p_ + pos_;
    pos_ += k;
    return q;
  }

  std::string line() {
    const std::size_t max = std::min<std::size_t>(n_ - pos_, 128);
    const auto* nl = static_cast<const unsigned char*>(std::memchr(p_ + pos_, '\n', max));
    if (!nl) bad("a GLOBAL name is cut short or too long");
    std::string s(reinterpret_cast<const char*>(p_ + pos_), static_cast<std::size_t>(nl - (p_ + pos_)));
    pos_ = static_cast<std::size_t>(nl - p_) + 1;
    return s;
  }

  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Value& top() {
    if (stack_.size() <= floor()) bad("an opcode needs a value the stack does not have");
    return stack_.back();
  }
  Value pop() {
    Value v = std::move(top());
    stack_.pop_back();
    return v;
  }
  std::vector<Value> popToMark() {
    if (marks_.empty()) bad("an opcode needs a MARK the stack does not have");
    std::vector<Value> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back())),
                             std::make_move_iterator(stack_.end()));
    stack_.resize(marks_.back());
    marks_.pop_back();
    poppedMark_ = markStarts_.back();
    markStarts_.pop_back();
    return items;
  }
  void push(Value v) { push(std::move(v), opStart_); }
  void push(Value v, std::size_t start) {
    v.start = start;
    stack_.push_back(std::move(v));
  }

  static Value of(Kind k, std::int64_t i = 0) {
    Value v;
    v.kind = k;
    v.i = i;
    if (k == Kind::List || k == Kind::Dict) v.box = std::make_shared<Box>();
    return v;
  }

  void nest(int depth) const {
    if (depth > kMaxDepth) bad("containers nest more than " + std::to_string(kMaxDepth) + " deep");
  }

  Value tuple(std::vector<Value> items) {
    Value t = of(Kind::Tuple);
    t.depth = 1;
    for (const Value& c : items) {
      if (c.box) c.box->sealed = true;
      t.depth = std::max(t.depth, c.nesting() + 1);
      t.raw = t.raw || c.raw;
    }
    nest(t.depth);
    t.items = std::make_shared<const std::vector<Value>>(std::move(items));
    return t;
  }

  // `child` into the open list or dict on top of the stack (of kind k).
  void insert(Kind k, const Value& child) {
    Value& target = top();
    if (target.hooks)
      bad("an OrderedDict holds items: LibTorch 1.13 reads OrderedDict() only as a tensor's empty hooks (save a dict)");
    if (target.kind != k || target.box->sealed)
      bad(std::string(k == Kind::List ? "APPEND" : "SETITEM") + " into something that is not an open " +
          (k == Kind::List ? "list" : "dict"));
    if (child.raw) bad("a class or storage reference is put into a container");
    if (child.box == target.box) bad("a container is put inside itself");
    if (child.box) child.box->sealed = true;
    if (k == Kind::List) target.box->kinds |= 1u << static_cast<unsigned>(child.kind);
    target.box->depth = std::max(target.box->depth, child.nesting() + 1);
    nest(target.box->depth);
  }
  void setItem(const Value& key, const Value& value) {
    if (key.kind != Kind::Str && key.kind != Kind::Int) bad("a dict key is not a string or an integer");
    insert(Kind::Dict, value);
    top().box->kinds |= 1u << static_cast<unsigned>(key.kind);
  }

  bool literal(unsigned char op);
  bool structure(unsigned char op);
  std::size_t stop();
  Value global(const std::string& module, const std::string& name) const;
  void reduce();
  Value storage(const std::vector<Value>& a) const;
  Value typeTag(const std::vector<Value>& a) const;
  Value tensor(const std::vector<Value>& a);

  const Zip& zip_;
  const Where& where_;
  const unsigned char* p_;
  std::size_t n_, pos_ = 0, tensors_ = 0;
  std::vector<Value> stack_, memo_;
  std::vector<std::size_t> marks_, markStarts_;
  std::size_t opStart_ = 0, poppedMark_ = 0;
  std::vector<Edit> edits_;
};

// Opcodes that push one value read from the operands.
bool PickleChecker::literal(unsigned char op) {
  switch (op) {
    case 'N': push(of(Kind::None)); return true;
    case 0x88: push(of(Kind::Bool, 1)); return true;
    case 0x89: push(of(Kind::Bool, 0)); return true;
    case 'K': push(of(Kind::Int, static_cast<std::int64_t>(le(take(1), 1)))); return true;
    case 'M': push(of(Kind::Int, static_cast<std::int64_t>(le(take(2), 2)))); return true;
    case 'J': push(of(Kind::Int, static_cast<std::int32_t>(le(take(4), 4)))); return true;
    case 0x8a: {  // LONG1: little-endian two's complement of n bytes; an int64 holds 8
      const std::size_t k = *take(1);
      if (k > 8) bad("an integer of " + std::to_string(k) + " bytes is wider than 64 bits");
      const unsigned char* b = take(k);
      std::uint64_t v = k ? le(b, static_cast<int>(k)) : 0;
      if (k > 0 && k < 8 && (b[k - 1] & 0x80)) v |= ~std::uint64_t{0} << (8 * k);
      push(of(Kind::Int, static_cast<std::int64_t>(v)));
      if (k != 8) {  // LibTorch 1.13 reads only 8-byte LONG1s; Python writes the fewest bytes
        std::string wide = "\x8a\x08";
        for (int i = 0; i < 8; ++i) wide.push_back(static_cast<char>(v >> (8 * i)));
        edits_.push_back({opStart_, 1, wide, 2 + k});
      }
      return true;
    }
    case 'G': take(8); push(of(Kind::Float)); return true;
    case 'X': {
      const std::uint64_t len = le(take(4), 4);
      Value s = of(Kind::Str);
      s.s = std::make_shared<const std::string>(reinterpret_cast<const char*>(take(len)), len);
      push(std::move(s));
      return true;
    }
    case 'c': {
      const std::string module = line();
      push(global(module, line()));
      return true;
    }
    default: return false;
  }
}

// Opcodes that build containers, tensors and storages, and the memo.
bool PickleChecker::structure(unsigned char op) {
  switch (op) {
    case '(': marks_.push_back(stack_.size()); markStarts_.push_back(opStart_); return true;
    case ')': push(tuple({})); return true;
    case 't': {
      Value t = tuple(popToMark());
      push(std::move(t), poppedMark_);
      return true;
    }
    case 0x85: case 0x86: case 0x87: {
      std::vector<Value> items(op - 0x84u);
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      const std::size_t start = items[0].start;
      push(tuple(std::move(items)), start);
      return true;
    }
    case ']': push(of(Kind::List)); return true;
    case '}': push(of(Kind::Dict)); return true;
    case 'a': {  // LibTorch 1.13 lacks APPEND: MARK before the item, APPENDS instead
      const Value item = pop();
      insert(Kind::List, item);
      edits_.push_back({item.start, 0, "(", 0});
      edits_.push_back({opStart_, 1, "e", 1});
      return true;
    }
    case 'e': for (const Value& v : popToMark()) insert(Kind::List, v); return true;
    case 's': {  // LibTorch 1.13 lacks SETITEM: MARK before the key, SETITEMS instead
      const Value value = pop(), key = pop();
      setItem(key, value);
      edits_.push_back({key.start, 0, "(", 0});
      edits_.push_back({opStart_, 1, "u", 1});
      return true;
    }
    case 'u': {
      const std::vector<Value> kv = popToMark();
      if (kv.size() % 2) bad("SETITEMS with a key and no value");
      for (std::size_t i = 0; i < kv.size(); i += 2) setItem(kv[i], kv[i + 1]);
      return true;
    }
    case 'q': case 'r': {  // BINPUT, LONG_BINPUT: slots in order, as both writers give them
      if ((op == 'q' ? le(take(1), 1) : le(take(4), 4)) != memo_.size()) bad("a memo slot is given out of order");
      memo_.push_back(top());
      return true;
    }
    case 'h': case 'j': {
      const std::uint64_t slot = op == 'h' ? le(take(1), 1) : le(take(4), 4);
      if (slot >= memo_.size()) bad("BINGET of a memo slot never set");
      push(memo_[slot]);
      return true;
    }
    case 'R': reduce(); return true;
    case 'Q': {
      const Value pid = pop();
      if (pid.kind != Kind::Tuple) bad("a persistent id is not a tuple");
      push(storage(*pid.items), pid.start);
      return true;
    }
    default: return false;
  }
}

std::size_t PickleChecker::stop() {
  if (!marks_.empty() || stack_.size() != 1 || stack_[0].kind != Kind::Dict)
    bad("STOP leaves something other than one dict (a checkpoint is a dict)");
  if (pos_ != n_) bad("bytes follow STOP");
  return tensors_;
}

Value PickleChecker::global(const std::string& module, const std::string& name) const {
  Value g = of(Kind::Global);
  g.raw = true;
  if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
    g.i = static_cast<std::int64_t>(Callable::RebuildTensor);
    return g;
  }
  if (module == "collections" && name == "OrderedDict") {
    g.i = static_cast<std::int64_t>(Callable::OrderedDict);
    return g;
  }
  if (module == "torch.jit._pickle" && (name == "restore_type_tag" || name == "build_intlist")) {
    g.i = static_cast<std::int64_t>(name == "build_intlist" ? Callable::IntList : Callable::TypeTag);
    return g;
  }
  for (const StorageType& t : kStorageTypes) {
    if (module != "torch" || name != t.name) continue;
    g.i = static_cast<std::int64_t>(Callable::StorageType);
    g.elem = t.bytes;
    return g;
  }
  bad("names " + module.substr(0, 60) + "." + name.substr(0, 60) +
      ": a checkpoint names only torch._utils._rebuild_tensor_v2, torch.<type>Storage, collections.OrderedDict "
      "and torch.jit._pickle's restore_type_tag and build_intlist");
}

void PickleChecker::reduce() {
  const Value args = pop(), f = pop();
  if (f.kind != Kind::Global || args.kind != Kind::Tuple)
    bad("REDUCE applies something other than a known class to a tuple");
  if (f.i == static_cast<std::int64_t>(Callable::RebuildTensor)) return push(tensor(*args.items), f.start);
  if (f.i == static_cast<std::int64_t>(Callable::TypeTag)) return push(typeTag(*args.items), f.start);
  if (f.i == static_cast<std::int64_t>(Callable::IntList)) {
    const std::vector<Value>& a = *args.items;
    if (a.size() != 1 || a[0].kind != Kind::List || (a[0].box->kinds & ~(1u << static_cast<unsigned>(Kind::Int))))
      bad("build_intlist's argument is not a list of integers");
    return push(a[0], f.start);
  }
  if (f.i != static_cast<std::int64_t>(Callable::OrderedDict) || !args.items->empty())
    bad("REDUCE calls a storage type, or OrderedDict with arguments (torch.save does neither)");
  Value hooks = of(Kind::None);
  hooks.hooks = true;
  push(std::move(hooks), f.start);
}

// restore_type_tag(container, tag): one of kTypeTags, on a container whose keys or items fit it.
Value PickleChecker::typeTag(const std::vector<Value>& a) const {
  if (a.size() == 2 && a[1].kind == Kind::Str) {
    for (const TypeTag& t : kTypeTags) {
      if (*a[1].s != t.tag || a[0].kind != t.container) continue;
      if (t.element != Kind::None && (a[0].box->kinds & ~(1u << static_cast<unsigned>(t.element))))
        bad(std::string("a container tagged ") + t.tag + " holds keys of another kind");
      return a[0];
    }
  }
  bad("restore_type_tag's arguments are not a dict or list and one of the tags tpbench writes");
}

Value PickleChecker::storage(const std::vector<Value>& a) const {
  if (a.size() != 5 || a[0].kind != Kind::Str || *a[0].s != "storage" || a[1].kind != Kind::Global ||
      a[1].i != static_cast<std::int64_t>(Callable::StorageType) || a[2].kind != Kind::Str || a[3].kind != Kind::Str ||
      a[4].kind != Kind::Int)
    bad("a persistent id is not ('storage', torch.<type>Storage, key, location, numel)");
  const std::string& key = *a[2].s;
  if (*a[3].s != "cpu")
    bad("storage '" + key.substr(0, 40) + "' is on '" + a[3].s->substr(0, 40) +
        "': tpbench reads CPU checkpoints (torch.load with map_location='cpu' before torch.save)");
  const auto it = zip_.entries.find("data/" + key);
  if (it == zip_.entries.end()) bad("storage '" + key.substr(0, 40) + "' has no data/" + key.substr(0, 40) + " entry");
  std::uint64_t bytes = 0;
  const auto numel = static_cast<std::uint64_t>(a[4].i), elem = static_cast<std::uint64_t>(a[1].elem);
  if (a[4].i < 0 || __builtin_mul_overflow(numel, elem, &bytes) ||
      bytes != it->second.size)
    bad("storage '" + key + "' claims " + std::to_string(a[4].i) + " elements of " + std::to_string(a[1].elem) +
        " bytes, its entry holds " + std::to_string(it->second.size) + " bytes");
  Value s = of(Kind::Storage, a[4].i);
  s.raw = true;
  s.s = a[2].s;
  return s;
}

// torch._utils._rebuild_tensor_v2(storage, offset, sizes, strides, requires_grad, hooks): every
// element the tensor can address lies inside its storage.
Value PickleChecker::tensor(const std::vector<Value>& a) {
  if (a.size() != 6 || a[0].kind != Kind::Storage || a[1].kind != Kind::Int || a[2].kind != Kind::Tuple ||
      a[3].kind != Kind::Tuple || a[4].kind != Kind::Bool || !a[5].hooks)
    bad("a tensor is not (storage, offset, sizes, strides, requires_grad, empty hooks)");
  const std::vector<Value>& sizes = *a[2].items;
  const std::vector<Value>& strides = *a[3].items;
  const std::string name = "tensor " + std::to_string(tensors_) + " (storage '" + *a[0].s + "')";
  if (sizes.size() != strides.size() || sizes.size() > kMaxDims) bad(name + " has sizes and strides of other ranks");
  std::int64_t last = a[1].i, count = 1;
  bool empty = false;
  if (last < 0) bad(name + " has a negative storage offset");
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    const std::int64_t size = sizes[d].i, stride = strides[d].i;
    if (sizes[d].kind != Kind::Int || strides[d].kind != Kind::Int || size < 0 || stride < 0)
      bad(name + " has a size or stride that is not a non-negative integer");
    std::int64_t reach = 0;
    if (__builtin_mul_overflow(count, size, &count) ||
        (size > 0 && (__builtin_mul_overflow(size - 1, stride, &reach) || __builtin_add_overflow(last, reach, &last))))
      bad(name + " has sizes and strides whose extent overflows 64 bits");
    empty = empty || size == 0;
  }
  const std::int64_t numel = a[0].i;
  if (empty ? a[1].i > numel : last >= numel)
    bad(name + " reaches element " + std::to_string(last) + " of a storage of " + std::to_string(numel) +
        " (past its stored bytes)");
  ++tensors_;
  return of(Kind::Tensor);
}

}  // namespace

std::uint32_t zipCrc32(const std::string& bytes) {
  // One table entry per byte value: the remainder of that byte after eight polynomial steps.
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t r = i;
      for (int bit = 0; bit < 8; ++bit) r = (r >> 1) ^ (r & 1 ? 0xEDB88320u : 0u);
      t[i] = r;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char c : bytes) crc = table[(crc ^ c) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

std::string storedZip(const std::vector<std::pair<std::string, std::string>>& entries) {
  auto put = [](std::string& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  };
  std::string out, central;
  for (const auto& [name, data] : entries) {
    TPB_CHECK(out.size() + data.size() + name.size() + 30 < 0xFFFFFFFFu, "storedZip: more than 4 GiB");
    const std::uint32_t crc = zipCrc32(data);
    std::string fields;  // version needed; flags, method (stored), time, date; CRC; sizes; name, extra lengths
    put(fields, 20, 2), put(fields, 0, 8), put(fields, crc, 4);
    put(fields, data.size(), 4), put(fields, data.size(), 4), put(fields, name.size(), 2), put(fields, 0, 2);
    const std::size_t offset = out.size();
    out += std::string("PK\x03\x04", 4) + fields + name + data;
    central += std::string("PK\x01\x02\x14\x00", 6) + fields;
    put(central, 0, 6), put(central, 0, 4), put(central, offset, 4);  // comment, disk, attributes; local header
    central += name;
  }
  const std::size_t offset = out.size();
  out += central + std::string("PK\x05\x06", 4);
  put(out, 0, 4), put(out, entries.size(), 2), put(out, entries.size(), 2);
  put(out, central.size(), 4), put(out, offset, 4), put(out, 0, 2);
  return out;
}

CheckpointContents checkCheckpointBytes(const unsigned char* data, std::size_t size, const std::string& label,
                                        const std::string& name) {
  const Where where(label, name);
  Zip zip{data, size, where, {}, {}};
  readZip(zip);
  CheckpointContents c;
  c.archive = zip.archive;
  c.records = zip.entries.size();
  PickleChecker pickle(zip, zip.entries.at("data.pkl"));
  c.tensors = pickle.run();
  const std::string rewritten = pickle.rewritten();
  if (rewritten.empty()) return c;
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [name, e] : zip.entries) {
    const char* bytes = reinterpret_cast<const char*>(data) + e.data;
    entries.emplace_back(zip.archive + "/" + name, name == "data.pkl" ? rewritten : std::string(bytes, e.size));
  }
  c.rewritten = storedZip(entries);
  return c;
}

std::vector<char> readCheckedCheckpoint(const std::string& label, const std::string& path, std::uint64_t maxBytes,
                                        const std::string& bound) {
  const RegularFile f(label, path);
  const std::vector<unsigned char> bytes = f.readAll(maxBytes, bound);
  const CheckpointContents c = checkCheckpointBytes(bytes.data(), bytes.size(), label, path);
  if (!c.rewritten.empty()) return std::vector<char>(c.rewritten.begin(), c.rewritten.end());
  return std::vector<char>(bytes.begin(), bytes.end());
}

}  // namespace tpb
