//! MCP client side: transports, connections and the tools they provide.

pub mod sse;
