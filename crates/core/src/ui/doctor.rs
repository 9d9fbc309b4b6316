//! The `antler doctor` report: one row per check.

use serde::Serialize;

use crate::base::table::table;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CheckStatus {
    /// Fine.
    Ok,
    /// Works, but worth a look (e.g. a disabled server, unknown config keys).
    Warn,
    /// Broken: doctor exits non-zero.
    Fail,
    /// Not checked (e.g. `--offline`, or an earlier check failed).
    Skip,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    /// What was checked, e.g. `config.yaml` or `mcp: github`.
    pub check: String,
    pub status: CheckStatus,
    /// What was found, or what is wrong and how to fix it.
    pub detail: String,
}

impl Check {
    pub(crate) fn new(
        check: impl Into<String>,
        status: CheckStatus,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            check: check.into(),
            status,
            detail: detail.into(),
        }
    }
}

/// The report as a table, with a closing verdict line.
pub(crate) fn doctor_table(checks: &[Check]) -> String {
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|c| {
            let status = match c.status {
                CheckStatus::Ok => "ok",
                CheckStatus::Warn => "warn",
                CheckStatus::Fail => "FAIL",
                CheckStatus::Skip => "skip",
            };
            vec![c.check.clone(), status.to_string(), c.detail.clone()]
        })
        .collect();
    let mut out = table(&["CHECK", "STATUS", "DETAIL"], &rows);
    let failed = checks
        .iter()
        .filter(|c| c.status == CheckStatus::Fail)
        .count();
    out.push_str(&if failed == 0 {
        String::from("\nAll checks passed.\n")
    } else {
        format!("\n{failed} check(s) failed.\n")
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_verdict() {
        let text = doctor_table(&[
            Check::new("config.yaml", CheckStatus::Ok, "./config.yaml"),
            Check::new("model", CheckStatus::Fail, "no endpoint"),
        ]);
        assert_eq!(
            text,
            "CHECK        STATUS  DETAIL\nconfig.yaml  ok      ./config.yaml\nmodel        FAIL    no endpoint\n\n1 check(s) failed.\n"
        );
    }
}
