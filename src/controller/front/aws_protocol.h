// The cloud service's own protocol on endured: `POST /` with `X-Amz-Target: SageMaker.<Action>`
// and `Content-Type: application/x-amz-json-1.1`, as the aws CLI, boto3 and the SDKs send
// it. Each action is served by the same handler as `POST /v1/<Action>`; this file only
// converts where the service's API model differs from endured's /v1 shapes, in one place:
//
//   - timestamps: /v1 writes ISO-8601 strings, the protocol epoch seconds as JSON numbers;
//   - pagination: MaxResults and NextToken on the List actions that have them;
//   - the few fields the model names or types otherwise (EventId a string, a batch
//     failure's ErrorCode, DescribeClusterEvent's EventDetails, UpdateClusterSoftware's
//     InstanceGroups as objects, StartClusterHealthCheck's per-group configurations);
//   - errors: the service's codes with its HTTP statuses (every client error is 400).
//
// Fields /v1 adds beyond the model (NodeName, ClusterId, ...) stay: the SDKs skip members
// their model does not know.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/json.h"
#include "common/result.h"

namespace endure::controller::aws {

inline constexpr const char* kTargetPrefix = "SageMaker.";
inline constexpr const char* kContentType = "application/x-amz-json-1.1";
inline constexpr const char* kTargetHeader = "X-Amz-Target";
inline constexpr const char* kRequestIdHeader = "x-amzn-RequestId";
// The name requests are signed for (the credential scope's service).
inline constexpr const char* kSigningName = "sagemaker";
// The protocol's answer to an action endure does not serve.
inline constexpr const char* kUnknownOperation = "UnknownOperationException";
inline constexpr const char* kResourceLimitExceeded = "ResourceLimitExceeded";

// The /v1 handler of an operator action.
using Handler = std::function<Result<json>(const std::string& action, const json& request)>;

// Serves one protocol call of action (the target without "SageMaker."): the request in the
// model's shape goes to handle in /v1's, and the reply comes back in the model's. An
// action the protocol does not serve is an UnknownOperationException.
Result<json> call(const std::string& action, const json& request, const Handler& handle);

// The HTTP status the protocol answers an error code with.
int http_status(const std::string& code);

// An error reply's body: {"__type": code, "message": ...}.
json error_body(const Error& error);

// "2026-12-02T14:15:00.123Z" as seconds since the epoch; nullopt when it is not that form.
std::optional<double> parse_iso_time(const std::string& text);

}  // namespace endure::controller::aws
