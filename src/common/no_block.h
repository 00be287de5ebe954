// A thread that must not wait: an HTTP I/O thread serving a small GET itself instead of handing it
// to a worker (s3/http_server.cc, docs/architecture.md "Small GETs on the I/O thread"). It runs
// the ordinary handler inside a Scope; every step that could wait — a file system call past the
// metadata cache, a read of shard data, a namespace lock somebody holds, a task for the drive
// pool, a peer call, a blocking socket write — asks MayWait() first. Under a scope the answer is
// no: the step fails with kWouldBlock and the scope is tripped, so whatever the attempt produced
// (an error, a partial answer) is dropped and the request runs again on a worker, unchanged.
// Outside a scope MayWait() is always true, so the same code serves both.
#pragma once

#include <string_view>

#include "common/result.h"

namespace rdmastor::noblock {

class Scope {
 public:
  Scope();
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  // Some step of the attempt needed to wait: its answer must be dropped.
  bool tripped() const { return tripped_; }

 private:
  friend bool MayWait();
  Scope* outer_;
  bool tripped_ = false;
};

// True when the calling thread may wait; under a Scope false, and the scope is tripped.
bool MayWait();

// The error a step returns when MayWait() said no.
Error WouldBlock(std::string_view what);

}  // namespace rdmastor::noblock
