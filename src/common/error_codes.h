// The error codes every part answers with (an error reply's "__type", a Status's code), as
// the cloud API names them. The wire re-exports them as api::k*.
#pragma once

namespace endure::errors {

inline constexpr const char* kValidationException = "ValidationException";
inline constexpr const char* kResourceNotFound = "ResourceNotFound";
inline constexpr const char* kResourceInUse = "ResourceInUse";
inline constexpr const char* kConflictException = "ConflictException";
inline constexpr const char* kUnauthorized = "Unauthorized";
inline constexpr const char* kInternalFailure = "InternalFailure";

}  // namespace endure::errors
