#pragma once
// core/v1 and events.k8s.io/v1 Events share one storage, in the core shape; these convert a
// stored event to the events.k8s.io shape and an events.k8s.io body to the core shape.

#include "json_util.hpp"

namespace spotshift::kubesim {

void core_event_to_new(const Value& core, Value& out, Alloc& a);
void new_event_to_core(const Value& in, Value& core, Alloc& a);

}  // namespace spotshift::kubesim
