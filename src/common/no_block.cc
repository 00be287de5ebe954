#include "common/no_block.h"

#include <string>

namespace rdmastor::noblock {

namespace {
thread_local Scope* t_scope = nullptr;
}  // namespace

Scope::Scope() : outer_(t_scope) { t_scope = this; }

Scope::~Scope() { t_scope = outer_; }

bool MayWait() {
  Scope* s = t_scope;
  if (!s) return true;
  s->tripped_ = true;
  return false;
}

Error WouldBlock(std::string_view what) {
  return MakeError(ErrorCode::kWouldBlock, std::string(what) + " would wait on this thread");
}

}  // namespace rdmastor::noblock
