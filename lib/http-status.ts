/** The HTTP statuses the server answers with, by name (one list for every route and hook). */
export const enum HttpStatus {
  NoContent = 204,
  NotModified = 304,
  BadRequest = 400,
  Unauthorized = 401,
  Forbidden = 403,
  NotFound = 404,
  MethodNotAllowed = 405,
  RequestTimeout = 408,
  PayloadTooLarge = 413,
  UnsupportedMediaType = 415,
  TooManyRequests = 429,
  HeaderTooLarge = 431,
  Internal = 500,
  BadGateway = 502,
  Unavailable = 503,
  GatewayTimeout = 504,
}
