#pragma once

// The one exception type of minifloat/io. It derives from std::runtime_error so callers that
// do not care where a failure came from can catch it with everything else, while callers
// loading user files can catch exactly the "this file is bad" case.

#include <stdexcept>

namespace minifloat {

// what() is a single line: the file path (or "<memory>") when known, what was wrong, and what
// was expected instead.
class io_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace minifloat
