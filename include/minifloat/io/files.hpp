#pragma once
// Files as untrusted inputs and as outputs that must never be half written.
//
// Inputs: require_regular_file() refuses what is not a regular file before it is opened, with a
// message that says what it is (a FIFO would block the reader forever, a device never ends).
//
// Outputs: output_batch stages every file of a command in a temporary file next to its target
// (same folder, so the final rename stays on one file system and is atomic), writes, flushes,
// syncs and closes it, and checks every step. commit() renames all staged files over their
// targets only after every one of them was written; when anything fails, or the batch is
// destroyed without commit(), the temporary files (and folders it created, if still empty) are
// removed and every target keeps its old content. A path the batch did not create is never
// removed.
//
//   minifloat::output_batch out;
//   out.stage("q.npy", {header, data});       // throws io_error; q.npy untouched so far
//   out.stage("report.json", text);
//   out.commit();                             // both appear, or (on error) neither changed
//
// Targets that exist and are not regular files (a character device such as /dev/stdout or
// /dev/null, a FIFO) cannot be replaced by a rename without destroying them; their bytes are kept
// in memory and written straight into them by commit(), before any rename, so that a failing
// device (/dev/full) aborts the whole batch. A symbolic link is followed: the file it points to
// is replaced and the link stays. A directory is refused.
//
// same_file() compares device and inode (std::filesystem::equivalent) when both paths exist,
// and the normalised absolute paths otherwise, so an output can be checked against every input
// and every other output before anything is written.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ios>
#include <limits>
#include <initializer_list>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>  // fsync
#define MINIFLOAT_IO_HAVE_FSYNC 1
#else
#define MINIFLOAT_IO_HAVE_FSYNC 0
#endif

#include "error.hpp"

namespace minifloat {

/// What a path names, after following symbolic links.
enum class file_kind : std::uint8_t {
  missing, regular, directory, fifo, character_device, block_device, socket, other
};

[[nodiscard]] constexpr std::string_view to_string(file_kind k) noexcept {
  switch (k) {
    case file_kind::missing: return "missing";
    case file_kind::regular: return "a regular file";
    case file_kind::directory: return "a directory";
    case file_kind::fifo: return "a FIFO (named pipe)";
    case file_kind::character_device: return "a character device";
    case file_kind::block_device: return "a block device";
    case file_kind::socket: return "a socket";
    case file_kind::other: return "not a regular file";
  }
  return "not a regular file";
}

[[nodiscard]] inline file_kind kind_of(const std::filesystem::path& p) noexcept {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  switch (st.type()) {
    case fs::file_type::not_found:
    case fs::file_type::none: return file_kind::missing;
    case fs::file_type::regular: return file_kind::regular;
    case fs::file_type::directory: return file_kind::directory;
    case fs::file_type::fifo: return file_kind::fifo;
    case fs::file_type::character: return file_kind::character_device;
    case fs::file_type::block: return file_kind::block_device;
    case fs::file_type::socket: return file_kind::socket;
    default: return ec ? file_kind::missing : file_kind::other;
  }
}

namespace detail {

[[nodiscard]] inline std::string path_text(const std::filesystem::path& p) { return printable_text(p.string()); }

[[nodiscard]] inline std::string errno_text(int e) {
  return e == 0 ? std::string() : " (" + std::generic_category().message(e) + ")";
}

/// The file a path finally names once every symbolic link on it is followed (the path itself if
/// it is not a link; a dangling link gives the missing file it points to).
[[nodiscard]] inline std::filesystem::path follow_links(std::filesystem::path p) {
  namespace fs = std::filesystem;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec)) || ec) return p;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) return p;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  throw io_error(path_text(p) + ": too many levels of symbolic links; expected a file path");
}

/// Normalised absolute form, for comparing paths that do not exist (yet).
[[nodiscard]] inline std::filesystem::path comparable_path(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::path r = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  if (ec) r = std::filesystem::absolute(p, ec).lexically_normal();
  return r;
}

}  // namespace detail

/// Throws io_error unless `p` names a regular file (symbolic links followed). `expected` ends the
/// message, e.g. "a .npy file".
inline void require_regular_file(const std::filesystem::path& p, std::string_view expected) {
  const file_kind k = kind_of(p);
  if (k == file_kind::regular) return;
  const std::string name = detail::path_text(p);
  if (k == file_kind::missing)
    throw io_error(name + ": cannot open for reading (no such file or directory); expected " + std::string(expected));
  throw io_error(name + ": is " + std::string(to_string(k)) + ", not a regular file; expected " + std::string(expected));
}

/// A regular file open for binary reading, positioned at its start, and its size in bytes.
struct input_file {
  std::ifstream in;
  std::size_t size = 0;
};

/// The one way the readers open a file: require_regular_file(p, kind) first (a FIFO or device
/// would never end), then the stream and its size. Every failure goes to `fail(message)`, which
/// throws the reader's own io_error: "cannot open for reading (<errno text>)" + `on_open_error`,
/// or "cannot determine the file size; expected a regular file".
template <class Fail>
[[nodiscard]] input_file open_input(const std::filesystem::path& p, std::string_view kind, std::string_view on_open_error,
                                    Fail&& fail) {
  require_regular_file(p, kind);
  input_file f;
  errno = 0;
  f.in.open(p, std::ios::binary);
  if (!f.in) fail("cannot open for reading" + detail::errno_text(errno) + std::string(on_open_error));
  f.in.seekg(0, std::ios::end);
  const std::streamoff end = f.in.tellg();
  f.in.seekg(0, std::ios::beg);
  if (!f.in || end < 0 || static_cast<std::uintmax_t>(end) > std::numeric_limits<std::size_t>::max())
    fail(std::string("cannot determine the file size; expected a regular file"));
  f.size = static_cast<std::size_t>(end);
  return f;
}

/// True when a and b name the same file: same device and inode if both exist, else the same
/// normalised absolute path (after following symbolic links).
[[nodiscard]] inline bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  const bool ea = std::filesystem::exists(a, ec), eb = std::filesystem::exists(b, ec);
  if (ea && eb) {
    const bool eq = std::filesystem::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  if (ea != eb) return false;
  return detail::comparable_path(detail::follow_links(a)) == detail::comparable_path(detail::follow_links(b));
}

/// Several output files written all-or-nothing (see the top of this file). Not copyable; moving
/// is not needed by any caller, so it is not offered either.
class output_batch {
 public:
  output_batch() = default;
  output_batch(const output_batch&) = delete;
  output_batch& operator=(const output_batch&) = delete;
  ~output_batch() { discard(); }

  /// Writes `pieces` (concatenated) to a temporary file next to `target`, or keeps them for a
  /// device or FIFO target. Throws io_error naming `target`; the target is untouched either way.
  void stage(const std::filesystem::path& target, std::initializer_list<std::span<const std::byte>> pieces) {
    stage_impl(target, std::span<const std::span<const std::byte>>(pieces.begin(), pieces.size()));
  }
  void stage(const std::filesystem::path& target, std::span<const std::span<const std::byte>> pieces) {
    stage_impl(target, pieces);
  }
  void stage(const std::filesystem::path& target, std::string_view text) {
    stage(target, {std::as_bytes(std::span<const char>(text.data(), text.size()))});
  }

  /// Creates `dir` (and missing parents) for outputs inside it; folders created here are removed
  /// again if the batch is not committed and they are still empty.
  void create_directories(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    std::vector<fs::path> missing;
    for (fs::path p = fs::absolute(dir).lexically_normal(); !p.empty(); p = p.parent_path()) {
      std::error_code ec;
      if (fs::exists(fs::symlink_status(p, ec))) break;
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
      throw io_error(detail::path_text(dir) + ": cannot create the folder" +
                     (ec ? " (" + ec.message() + ")" : std::string(" (a file of that name exists)")) +
                     "; expected a writable folder path");
    created_dirs_.insert(created_dirs_.end(), missing.begin(), missing.end());  // innermost first
  }

  /// Renames every staged file over its target (device and FIFO targets are written first). On
  /// an error nothing more is renamed and the error names what was and was not replaced.
  void commit() {
    namespace fs = std::filesystem;
    try {
      for (auto& e : entries_)
        if (e.temp.empty()) write_direct(e);
    } catch (...) {
      discard();
      throw;
    }
    std::size_t done = 0;
    for (auto& e : entries_) {
      if (e.temp.empty()) {
        ++done;
        continue;
      }
      std::error_code ec;
      fs::rename(e.temp, e.final_target, ec);
      if (ec) {
        const std::string msg = detail::path_text(e.target) + ": cannot replace it with the new file (" +
                                ec.message() + ")" +
                                (done == 0 ? std::string("; nothing was changed")
                                           : "; " + std::to_string(done) + " of " + std::to_string(entries_.size()) +
                                                 " outputs were already replaced");
        discard();
        throw io_error(msg);
      }
      e.temp.clear();
      ++done;
    }
    entries_.clear();
    created_dirs_.clear();
  }

  /// Removes every temporary file and every still-empty folder this batch created.
  void discard() noexcept {
    for (auto& e : entries_) {
      if (!e.temp.empty()) {
        std::error_code ec;
        std::filesystem::remove(e.temp, ec);
      }
    }
    entries_.clear();
    for (const auto& d : created_dirs_) {
      std::error_code ec;
      if (std::filesystem::is_empty(d, ec) && !ec) std::filesystem::remove(d, ec);
    }
    created_dirs_.clear();
  }

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct entry {
    std::filesystem::path target;        // as given (for messages)
    std::filesystem::path final_target;  // symbolic links followed
    std::filesystem::path temp;          // empty: written at commit (device, FIFO)
    std::vector<std::byte> direct;       // the bytes of a device or FIFO target
  };
  std::vector<entry> entries_;
  std::vector<std::filesystem::path> created_dirs_;

  static std::filesystem::path temp_name(const std::filesystem::path& final_target, unsigned attempt) {
    static thread_local std::minstd_rand rng{std::random_device{}()};
    std::string leaf = "." + final_target.filename().string();
    if (leaf.size() > 120) leaf.resize(120);
    leaf += ".tmp-" + std::to_string(rng()) + "-" + std::to_string(attempt);
    return final_target.parent_path() / leaf;
  }

  void stage_impl(const std::filesystem::path& target, std::span<const std::span<const std::byte>> pieces) {
    namespace fs = std::filesystem;
    const std::string name = detail::path_text(target);
    if (target.empty()) throw io_error("<empty path>: cannot open for writing; expected a file path");
    entry e;
    e.target = target;
    e.final_target = detail::follow_links(target);
    for (const auto& other : entries_)
      if (same_file(other.final_target, e.final_target))
        throw io_error(name + ": is given twice as an output; expected a different path for each output");
    const file_kind k = kind_of(e.final_target);
    if (k == file_kind::directory) throw io_error(name + ": is a directory; expected a file path to write");
    if (k != file_kind::missing && k != file_kind::regular) {
      for (const auto& p : pieces) e.direct.insert(e.direct.end(), p.begin(), p.end());
      entries_.push_back(std::move(e));
      return;
    }
    // 1. a fresh temporary file next to the target ("x": fail rather than reuse an existing file)
    std::FILE* f = nullptr;
    int open_errno = 0;
    for (unsigned attempt = 0; attempt < 100 && f == nullptr; ++attempt) {
      e.temp = temp_name(e.final_target, attempt);
      errno = 0;
      f = std::fopen(e.temp.string().c_str(), "wbx");
      open_errno = errno;
      if (f == nullptr && open_errno != EEXIST) break;
    }
    if (f == nullptr)
      throw io_error(name + ": cannot open for writing" + detail::errno_text(open_errno) +
                     ": no temporary file could be created in its folder; expected a writable folder");
    // 2. write, flush, sync, close: each can report a full disk
    int error = 0;
    std::size_t total = 0;
    for (const auto& p : pieces) {
      total += p.size();
      if (error == 0 && !p.empty()) {
        errno = 0;
        if (std::fwrite(p.data(), 1, p.size(), f) != p.size()) error = errno != 0 ? errno : EIO;
      }
    }
    errno = 0;
    if (error == 0 && std::fflush(f) != 0) error = errno != 0 ? errno : EIO;
#if MINIFLOAT_IO_HAVE_FSYNC
    errno = 0;
    if (error == 0 && ::fsync(::fileno(f)) != 0 && errno != EINVAL && errno != EROFS) error = errno;
#endif
    errno = 0;
    if (std::fclose(f) != 0 && error == 0) error = errno != 0 ? errno : EIO;
    if (error != 0) {
      std::error_code ec;
      fs::remove(e.temp, ec);
      throw io_error(name + ": write failed" + detail::errno_text(error) + "; expected " + std::to_string(total) +
                     " bytes to be written (the file was left as it was)");
    }
    // 3. an existing target keeps its permissions
    if (k == file_kind::regular) {
      std::error_code ec;
      fs::permissions(e.temp, fs::status(e.final_target, ec).permissions(), fs::perm_options::replace, ec);
    }
    entries_.push_back(std::move(e));
  }

  void write_direct(entry& e) {
    const std::string name = detail::path_text(e.target);
    errno = 0;
    std::FILE* f = std::fopen(e.final_target.string().c_str(), "wb");
    if (f == nullptr) {
      const int err = errno;
      throw io_error(name + ": cannot open for writing" + detail::errno_text(err) + "; expected a writable path");
    }
    int error = 0;
    errno = 0;
    if (!e.direct.empty() && std::fwrite(e.direct.data(), 1, e.direct.size(), f) != e.direct.size())
      error = errno != 0 ? errno : EIO;
    errno = 0;
    if (error == 0 && std::fflush(f) != 0) error = errno != 0 ? errno : EIO;
    errno = 0;
    if (std::fclose(f) != 0 && error == 0) error = errno != 0 ? errno : EIO;
    if (error != 0) {
      throw io_error(name + ": write failed" + detail::errno_text(error) + "; expected " + std::to_string(e.direct.size()) +
                     " bytes to be written (no file output was replaced)");
    }
    e.direct.clear();
    e.direct.shrink_to_fit();
  }
};

/// One file written all-or-nothing: output_batch with a single entry.
inline void write_file_atomically(const std::filesystem::path& target,
                                  std::initializer_list<std::span<const std::byte>> pieces) {
  output_batch b;
  b.stage(target, pieces);
  b.commit();
}

}  // namespace minifloat
