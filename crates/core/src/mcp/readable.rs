//! Errors as people read them in listings and statuses: the causes joined on one line,
//! without the Rust type names rmcp's transport errors carry.

/// An error and its causes on one line, so the reason survives into listings; without
/// the Rust type names rmcp's transport errors carry (`Transport [rmcp::…] error`).
pub(super) fn readable_error(err: &dyn std::error::Error) -> String {
    without_type_names(&crate::base::describe::error_chain(err))
}

/// `text` without its bracketed Rust type paths, in one pass (a server's error text may be
/// long and full of brackets).
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut open = None;
    for (at, c) in text.char_indices() {
        match c {
            '[' => open = Some(at),
            ']' => {
                if let Some(start) = open.take()
                    && text[start + 1..at].contains("::")
                {
                    out.push_str(text[copied..start].trim_end());
                    copied = at + 1;
                }
            }
            _ => {}
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_type_names_are_left_out_of_errors() {
        assert_eq!(
            without_type_names(
                "Transport send error: Transport [rmcp::transport::worker::WorkerTransport<a::B<c::D>>] \
                 error: HTTP 410 Gone: [x]"
            ),
            "Transport send error: Transport error: HTTP 410 Gone: [x]"
        );
        assert_eq!(without_type_names("a [b] c ["), "a [b] c [");
        assert_eq!(without_type_names("[x [y::z] w]"), "[x w]");
        // Linear: a megabyte of brackets is read once.
        let many = format!("{}]", "[".repeat(1 << 20));
        assert_eq!(without_type_names(&many), many);
    }
}
