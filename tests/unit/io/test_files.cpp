// io/files.hpp: regular-file inputs, same-file detection and all-or-nothing outputs, also through
// write_npy / write_safetensors.
#include <minifloat/io/files.hpp>
#include <minifloat/io/npy.hpp>
#include <minifloat/io/safetensors.hpp>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#if defined(__unix__)
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#endif

#include "support/files.hpp"

namespace {

namespace fs = std::filesystem;
using minifloat::io_error;

using test_support::io_error_message;
using test_support::temp_directory;
using test_support::read_text;
using test_support::write_text;

#if defined(__unix__)
/// A private character device node equal to /dev/full (writes fail with ENOSPC) when the test
/// may create one (root); otherwise /dev/full itself, which an unprivileged process cannot remove.
fs::path full_device(const temp_directory& dir) {
  const fs::path p = dir / "full";
  if (::geteuid() == 0 && ::mknod(p.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0) return p;
  return "/dev/full";
}
#endif

}  // namespace

TEST_CASE("files: kinds of input paths", "[io][files]") {
  const temp_directory dir;
  write_text(dir / "a.npy", "x");
  CHECK(minifloat::kind_of(dir / "a.npy") == minifloat::file_kind::regular);
  CHECK(minifloat::kind_of(dir.path()) == minifloat::file_kind::directory);
  CHECK(minifloat::kind_of(dir / "missing") == minifloat::file_kind::missing);
  CHECK_NOTHROW(minifloat::require_regular_file(dir / "a.npy", "a file"));
  CHECK_THAT(io_error_message([&] { minifloat::require_regular_file(dir.path(), "a .npy file"); }),
             Catch::Contains("is a directory, not a regular file; expected a .npy file"));
  CHECK_THAT(io_error_message([&] { minifloat::require_regular_file(dir / "missing", "x"); }),
             Catch::Contains("cannot open for reading (no such file or directory)"));
#if defined(__unix__)
  REQUIRE(::mkfifo((dir / "fifo.npy").c_str(), 0600) == 0);
  CHECK(minifloat::kind_of(dir / "fifo.npy") == minifloat::file_kind::fifo);
  // The readers refuse a FIFO before opening it (opening would wait for a writer forever).
  CHECK_THAT(io_error_message([&] { (void)minifloat::read_npy(dir / "fifo.npy"); }),
             Catch::Contains("is a FIFO (named pipe), not a regular file"));
  CHECK_THAT(io_error_message([&] { (void)minifloat::read_safetensors_header(dir / "fifo.npy"); }),
             Catch::Contains("FIFO"));
  CHECK_THAT(io_error_message([&] { (void)minifloat::read_safetensors(dir / "fifo.npy"); }), Catch::Contains("FIFO"));
  CHECK(minifloat::kind_of("/dev/null") == minifloat::file_kind::character_device);
  CHECK_THAT(io_error_message([&] { (void)minifloat::read_npy("/dev/zero"); }),
             Catch::Contains("is a character device, not a regular file"));
  fs::create_symlink(dir / "a.npy", dir / "link.npy");
  CHECK(minifloat::kind_of(dir / "link.npy") == minifloat::file_kind::regular);  // links are followed
#endif
  // Control characters in a path are escaped in the message.
  CHECK_THAT(io_error_message([&] { minifloat::require_regular_file(dir / "a\x1b[31m", "x"); }),
             Catch::Contains("a\\x1b[31m"));
}

TEST_CASE("files: same_file compares device and inode, or normalised paths", "[io][files]") {
  const temp_directory dir;
  write_text(dir / "a", "x");
  CHECK(minifloat::same_file(dir / "a", dir / "a"));
  CHECK(minifloat::same_file(dir / "a", dir / "." / "a"));
  fs::create_directories(dir / "sub");
  CHECK(minifloat::same_file(dir / "a", dir.path() / "sub" / ".." / "a"));
  CHECK_FALSE(minifloat::same_file(dir / "a", dir / "b"));
  CHECK(minifloat::same_file(dir / "new", dir / "." / "new"));  // neither exists yet
  CHECK_FALSE(minifloat::same_file(dir / "new", dir / "a"));
#if defined(__unix__)
  fs::create_hard_link(dir / "a", dir / "hard");
  CHECK(minifloat::same_file(dir / "a", dir / "hard"));
  fs::create_symlink(dir / "a", dir / "soft");
  CHECK(minifloat::same_file(dir / "soft", dir / "a"));
  fs::create_symlink(dir / "not_yet", dir / "dangling");
  CHECK(minifloat::same_file(dir / "dangling", dir / "not_yet"));  // the link's target, once written
#endif
}

TEST_CASE("files: output_batch commits all or nothing", "[io][files]") {
  const temp_directory dir;
  write_text(dir / "old.txt", "old content");
  {
    minifloat::output_batch b;
    b.stage(dir / "new.txt", "new");
    b.stage(dir / "old.txt", "replaced");
    CHECK(read_text(dir / "old.txt") == "old content");  // nothing visible before commit
    CHECK_FALSE(fs::exists(dir / "new.txt"));
    b.commit();
  }
  CHECK(read_text(dir / "new.txt") == "new");
  CHECK(read_text(dir / "old.txt") == "replaced");
  CHECK(dir.listing() == std::vector<std::string>{"new.txt", "old.txt"});  // no temporary file left

  {  // destroyed without commit: every target unchanged, temporary files gone
    minifloat::output_batch b;
    b.stage(dir / "old.txt", "lost");
    b.stage(dir / "other.txt", "lost");
  }
  CHECK(read_text(dir / "old.txt") == "replaced");
  CHECK(dir.listing() == std::vector<std::string>{"new.txt", "old.txt"});

  {  // the same target twice, also through another spelling
    minifloat::output_batch b;
    b.stage(dir / "twice.txt", "1");
    CHECK_THAT(io_error_message([&] { b.stage(dir.path() / "." / "twice.txt", "2"); }),
               Catch::Contains("given twice as an output"));
  }
  CHECK_FALSE(fs::exists(dir / "twice.txt"));

  {  // a directory is not a file to write; an unwritable folder fails at stage time
    minifloat::output_batch b;
    CHECK_THAT(io_error_message([&] { b.stage(dir.path(), "x"); }), Catch::Contains("is a directory"));
    CHECK_THAT(io_error_message([&] { b.stage(dir / "no" / "such" / "x", "x"); }),
               Catch::Contains("cannot open for writing"));
  }

  {  // created folders are removed again when nothing was committed into them
    minifloat::output_batch b;
    b.create_directories(dir / "plots" / "deep");
    b.stage(dir / "plots" / "deep" / "a.svg", "<svg/>");
    CHECK(fs::is_directory(dir / "plots" / "deep"));
  }
  CHECK_FALSE(fs::exists(dir / "plots"));
  {
    minifloat::output_batch b;
    b.create_directories(dir / "plots");
    b.stage(dir / "plots" / "a.svg", "<svg/>");
    b.commit();
  }
  CHECK(read_text(dir / "plots" / "a.svg") == "<svg/>");
  write_text(dir / "plots" / "file", "x");
  minifloat::output_batch b;
  CHECK_THAT(io_error_message([&] { b.create_directories(dir / "plots" / "file"); }),
             Catch::Contains("cannot create the folder"));
  CHECK(read_text(dir / "plots" / "file") == "x");
}

#if defined(__unix__)
TEST_CASE("files: a failing device aborts the batch and is never removed", "[io][files]") {
  const temp_directory dir;
  const fs::path full = full_device(dir);
  write_text(dir / "keep.npy", "keep");
  const std::vector<float> v{1, 2, 3};
  const std::array<std::size_t, 1> shape{3};
  minifloat::output_batch b;
  minifloat::write_npy(b, dir / "keep.npy", shape, v);
  b.stage(full, "report");
  CHECK_THAT(io_error_message([&] { b.commit(); }), Catch::Contains("write failed (No space left on device)"));
  CHECK(fs::is_character_file(full));           // the device node is still there
  CHECK(read_text(dir / "keep.npy") == "keep");     // and the other output was not replaced
  CHECK_THAT(io_error_message([&] { minifloat::write_npy(full, shape, v); }), Catch::Contains("write failed"));
  CHECK(fs::is_character_file(full));
  // A device that accepts the bytes is written directly (no rename over it).
  minifloat::write_npy("/dev/null", shape, v);
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("files: links are followed, permissions kept", "[io][files]") {
  const temp_directory dir;
  write_text(dir / "target.txt", "old");
  fs::permissions(dir / "target.txt", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink("target.txt", dir / "link.txt");
  minifloat::write_file_atomically(dir / "link.txt", {std::as_bytes(std::span<const char>("new", 3))});
  CHECK(fs::is_symlink(dir / "link.txt"));
  CHECK(read_text(dir / "target.txt") == "new");
  CHECK(fs::status(dir / "target.txt").permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
}
#endif

TEST_CASE("files: write_npy and write_safetensors keep the old file on failure", "[io][files]") {
  const temp_directory dir;
  const std::vector<float> v{1, 2};
  const std::array<std::size_t, 1> shape{2}, wrong{3};
  minifloat::write_npy(dir / "a.npy", shape, v);
  const std::string before = read_text(dir / "a.npy");
  CHECK_THROWS_AS(minifloat::write_npy(dir / "a.npy", wrong, v), io_error);  // data does not fit the shape
  CHECK(read_text(dir / "a.npy") == before);
  CHECK_THROWS_AS(minifloat::write_safetensors(dir / "a.npy", {{"t", minifloat::safetensors_dtype::F32, {3}, {}}}),
                  io_error);
  CHECK(read_text(dir / "a.npy") == before);
  CHECK(dir.listing() == std::vector<std::string>{"a.npy"});
  // Staged through a batch, both files appear together.
  minifloat::output_batch b;
  minifloat::write_npy(b, dir / "b.npy", shape, v);
  std::vector<std::byte> f32(8);
  std::memcpy(f32.data(), v.data(), 8);
  minifloat::write_safetensors(b, dir / "c.safetensors", {{"t", minifloat::safetensors_dtype::F32, {2}, f32}});
  CHECK(dir.listing().size() == 3);  // a.npy and two temporary files
  b.commit();
  CHECK(minifloat::read_npy(dir / "b.npy").as<float>().size() == 2);
  CHECK(minifloat::read_safetensors(dir / "c.safetensors").header.tensors.size() == 1);
  CHECK(dir.listing() == std::vector<std::string>{"a.npy", "b.npy", "c.safetensors"});
}
