// workload/checkpoint_check.h — a checkpoint file checked by tpbench itself before LibTorch's
// reader (miniz and the unpickler, which trust their input) sees a byte of it. LibTorch-free, so
// the fuzzer runs it under ASan and UBSan.
//
// What passes is exactly what tpbench's saveCheckpoint and PyTorch 1.13's torch.save of the same
// dict write:
//   - file: a regular file (no FIFO, device, directory; opened without blocking), at most the
//     caller's size bound;
//   - zip: one end-of-central-directory record at the very end (zip64 records as miniz writes
//     them), no comment, every entry stored (not compressed, not encrypted), on disk 0, its
//     local header matching its central one, its data inside the file and before the central
//     directory, no two entries overlapping, every name "<archive>/<rest>" under one archive
//     name with no "..", no NUL and no absolute path, names unique; "<archive>/data.pkl" and
//     "<archive>/version" (decimal digits) present;
//   - pickle (data.pkl): protocol 2, only the opcodes those two writers use (PROTO, STOP, MARK,
//     the empty and counted tuple, list and dict opcodes, APPEND(S), SETITEM(S), NONE, NEWTRUE,
//     NEWFALSE, BININT1/2, BININT, LONG1 up to 8 bytes, BINFLOAT, BINUNICODE, BINPUT/BINGET
//     and their LONG_ forms with memo slots given out in order, GLOBAL, REDUCE, BINPERSID), only
//     the globals they use (torch._utils._rebuild_tensor_v2, torch.<T>Storage,
//     collections.OrderedDict; LibTorch's torch.jit._pickle.restore_type_tag with the tags
//     "Dict[str, Any]", "Dict[int, Any]", "List[Any]" and build_intlist), every opcode's operands
//     of the kinds it takes, dict keys strings or integers, containers nested at most 64 deep and
//     never inside themselves, one dict left at STOP, nothing after it;
//   - tensors: each storage ('storage', torch.<T>Storage, key, 'cpu', numel) names a record
//     "<archive>/data/<key>" of exactly numel elements; each tensor's offset, sizes and strides
//     are non-negative and its last element lies inside its storage (overflow-checked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tpb {

struct CheckpointContents {
  std::string archive;      // the zip's top directory ("archive" for tpbench, the file's stem for torch.save)
  std::size_t records = 0;  // zip entries
  std::size_t tensors = 0;  // tensors the pickle builds
  // "" for tpbench's own files. For Python's torch.save, the same checkpoint in what LibTorch
  // 1.13's unpickler reads: Python writes APPEND and SETITEM for one-item lists and dicts and
  // LONG1 in the fewest bytes, which that unpickler refuses; each becomes MARK ... APPENDS,
  // MARK ... SETITEMS and an 8-byte LONG1, in a plain zip of the same entries.
  std::string rewritten;
};

// Checks the bytes of a checkpoint. Throws UsageError "<label> <name>: why" on anything else.
CheckpointContents checkCheckpointBytes(const unsigned char* data, std::size_t size, const std::string& label,
                                        const std::string& name);

// The CRC-32 a zip entry carries (ISO-HDLC: reflected polynomial 0xEDB88320, as zlib's crc32), so
// that writing a checkpoint does not need zlib. "123456789" gives 0xCBF43926.
std::uint32_t zipCrc32(const std::string& bytes);

// A zip of stored entries (full name, bytes) as miniz reads it, without zip64 (tpb::Error above
// 4 GiB): the rewritten checkpoint's container, and the tests' hostile ones.
std::string storedZip(const std::vector<std::pair<std::string, std::string>>& entries);

// Reads `path` as a RegularFile (common/regular_file.h), refusing one above maxBytes (`bound`
// says why that many), and checks it. Returns its bytes (rewritten where needed), safe to hand to
// torch::pickle_load.
std::vector<char> readCheckedCheckpoint(const std::string& label, const std::string& path,
                                        std::uint64_t maxBytes, const std::string& bound);

}  // namespace tpb
