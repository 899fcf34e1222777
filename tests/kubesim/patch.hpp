#pragma once
// PATCH semantics: JSON merge patch (RFC 7386), strategic merge patch for built-in types, and
// JSON patch (RFC 6902). Each applies to a copy of the current object in place.

#include "json_util.hpp"

namespace spotshift::kubesim {

enum class PatchType { kMerge, kStrategic, kJson, kApply };

// From a Content-Type; nothing for an unknown type (415).
std::optional<PatchType> patch_type_from(std::string_view content_type);

// RFC 7386: objects merge recursively, null deletes, everything else (lists included) replaces.
void merge_patch(Value& target, const Value& patch, Alloc& a);

// Strategic merge: as merge patch, but lists with a merge key (containers, volumes and env by
// name, conditions by type, ownerReferences by uid, ...) merge element by element, finalizers
// merge as a set, and the $patch, $deleteFromPrimitiveList and $setElementOrder directives work.
// Taints and tolerations have no merge key: they are replaced wholesale, as on a real apiserver.
Result<void> strategic_merge_patch(Value& target, const Value& patch, Alloc& a);

// RFC 6902 add/remove/replace/move/copy/test. A failed test or a missing path is an error with
// a message saying which operation failed (the caller answers 422).
Result<void> json_patch(Value& target, const Value& ops, Alloc& a);

bool json_equal(const Value& a, const Value& b);

}  // namespace spotshift::kubesim
