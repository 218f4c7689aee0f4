//! The error-code table of `docs/protocol.md` ("## Error codes") against [`action_for`]: the doc's
//! rows, read in order with the first match winning, must predict `action_for` for every API and
//! every error code Kafka defines, and every code that `action_for` or the error-table test
//! names must have a row of its own.

use kafka_protocol::error::ResponseError;

use super::*;

const PROTOCOL_MD: &str = include_str!("../../../../docs/protocol.md");
const ACTION_RS: &str = include_str!("action.rs");

const APIS: [Api; 5] = [
    Api::FindCoordinator,
    Api::JoinGroup,
    Api::SyncGroup,
    Api::Heartbeat,
    Api::LeaveGroup,
];

/// The codes `error_table_tests.rs` covers one by one (its "other" examples, REQUEST_TIMED_OUT,
/// UNKNOWN_SERVER_ERROR and an unknown code, fall under the doc's "any other code" rows and are
/// checked by the sweep below).
const ERROR_TABLE_CODES: [ResponseError; 14] = [
    ResponseError::GroupAuthorizationFailed,
    ResponseError::CoordinatorNotAvailable,
    ResponseError::NotCoordinator,
    ResponseError::CoordinatorLoadInProgress,
    ResponseError::UnknownMemberId,
    ResponseError::IllegalGeneration,
    ResponseError::FencedInstanceId,
    ResponseError::InconsistentGroupProtocol,
    ResponseError::InvalidSessionTimeout,
    ResponseError::InvalidGroupId,
    ResponseError::GroupMaxSizeReached,
    ResponseError::UnsupportedVersion,
    ResponseError::MemberIdRequired,
    ResponseError::RebalanceInProgress,
];

/// Which error codes a doc row matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codes {
    /// One code, named in its own row.
    One(ResponseError),
    /// "any" / "any other code": every code not matched by an earlier row.
    Any,
    /// "any other code Kafka marks retriable".
    AnyRetriable,
}

/// One row of the doc's table.
#[derive(Debug)]
struct Row {
    line: usize,
    apis: Vec<Api>,
    codes: Codes,
    action: String,
}

impl Row {
    fn matches(&self, api: Api, error: ResponseError) -> bool {
        self.apis.contains(&api)
            && match self.codes {
                Codes::One(code) => code == error,
                Codes::Any => true,
                Codes::AnyRetriable => error.is_retriable(),
            }
    }
}

/// Every error code: Kafka's known ones (-1 and 1..=200 covers them all with room to spare; the
/// rest of that range comes back as `Unknown`) and a far unknown one.
fn all_codes() -> impl Iterator<Item = ResponseError> {
    (-1..=200)
        .chain([9999])
        .filter_map(ResponseError::try_from_code)
}

/// `GROUP_MAX_SIZE_REACHED` → `GroupMaxSizeReached` (kafka-protocol's variant name).
fn camel_case(kafka_name: &str) -> String {
    kafka_name
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_string() + &chars.as_str().to_lowercase(),
                None => String::new(),
            }
        })
        .collect()
}

fn parse_api(name: &str, line: usize) -> Api {
    match name {
        "FindCoordinator" => Api::FindCoordinator,
        "JoinGroup" => Api::JoinGroup,
        "SyncGroup" => Api::SyncGroup,
        "Heartbeat" => Api::Heartbeat,
        "LeaveGroup" => Api::LeaveGroup,
        other => panic!("docs/protocol.md:{line}: unknown API {other:?}"),
    }
}

fn parse_codes(name: &str, code: &str, line: usize) -> Codes {
    if name.starts_with("any") {
        assert!(
            code == "—" || code.is_empty(),
            "docs/protocol.md:{line}: a wildcard row ({name:?}) must not name a code number"
        );
        return if name.contains("retriable") {
            Codes::AnyRetriable
        } else {
            Codes::Any
        };
    }
    let number: i16 = code.parse().unwrap_or_else(|_| {
        panic!("docs/protocol.md:{line}: {name}: code column {code:?} is not a number")
    });
    let error = ResponseError::try_from_code(number)
        .unwrap_or_else(|| panic!("docs/protocol.md:{line}: code 0 is no error"));
    assert_eq!(
        format!("{error:?}"),
        camel_case(name),
        "docs/protocol.md:{line}: code {number} is not {name}"
    );
    Codes::One(error)
}

/// The rows of the table under "## Error codes", in order.
fn doc_rows() -> Vec<Row> {
    let lines: Vec<(usize, &str)> = PROTOCOL_MD
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .skip_while(|(_, l)| l.trim() != "## Error codes")
        .skip_while(|(_, l)| !l.starts_with('|'))
        .take_while(|(_, l)| l.starts_with('|'))
        .collect();
    let header: Vec<&str> = lines
        .first()
        .expect("docs/protocol.md has a table under \"## Error codes\"")
        .1
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        ["", "API", "Error code", "Code", "Action", ""],
        "docs/protocol.md: the error table's columns changed"
    );
    lines
        .iter()
        .skip(2) // header and separator
        .map(|&(line, text)| {
            let cells: Vec<&str> = text.split('|').map(str::trim).collect();
            let [_, apis, name, code, action, _] = cells[..] else {
                panic!("docs/protocol.md:{line}: expected 4 cells: {text}");
            };
            Row {
                line,
                apis: apis.split(',').map(|a| parse_api(a.trim(), line)).collect(),
                codes: parse_codes(name, code, line),
                action: action.to_owned(),
            }
        })
        .collect()
}

/// The [`ErrorAction`] a row's action cell documents, for `api` and `error`.
fn documented_action(row: &Row, api: Api, error: ResponseError) -> ErrorAction {
    let line = row.line;
    let text = row.action.as_str();
    let verb = text
        .strip_prefix("**")
        .and_then(|rest| rest.split_once("**"))
        .map(|(verb, _)| verb)
        .unwrap_or_else(|| panic!("docs/protocol.md:{line}: the action must start in **bold**"));
    match verb {
        "ignore" => ErrorAction::Ignore,
        "rediscover the coordinator" => ErrorAction::RediscoverCoordinator,
        "rejoin" => ErrorAction::Rejoin,
        "rejoin with the member id" => ErrorAction::RejoinWithAssignedMemberId,
        "reset member id and rejoin" => ErrorAction::ResetMemberIdAndRejoin,
        "reset generation and rejoin" => ErrorAction::ResetGenerationAndRejoin,
        "retry" if text.contains("exponential backoff") => {
            ErrorAction::Retry(RetryBackoff::Exponential)
        }
        "retry" if text.contains("fixed backoff") => ErrorAction::Retry(RetryBackoff::Fixed),
        "fatal" => {
            let variant = text
                .split('`')
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .unwrap_or_else(|| {
                    panic!("docs/protocol.md:{line}: a fatal action names its `FatalError`")
                });
            ErrorAction::Fatal(match variant {
                "GroupAuthorizationFailed" => FatalError::GroupAuthorizationFailed,
                "FencedInstanceId" => FatalError::FencedInstanceId,
                "InconsistentGroupProtocol" => FatalError::InconsistentGroupProtocol,
                "InvalidSessionTimeout" => FatalError::InvalidSessionTimeout,
                "InvalidGroupId" => FatalError::InvalidGroupId,
                "GroupMaxSizeReached" => FatalError::GroupMaxSizeReached,
                "UnsupportedVersion" => FatalError::UnsupportedVersion,
                "Unexpected" => FatalError::Unexpected {
                    api,
                    error: error.into(),
                },
                other => panic!("docs/protocol.md:{line}: unknown FatalError {other:?}"),
            })
        }
        other => panic!("docs/protocol.md:{line}: unknown action {other:?} in {text:?}"),
    }
}

#[test]
fn doc_table_predicts_action_for_every_api_and_code() {
    let rows = doc_rows();
    let mut checked = 0;
    for api in APIS {
        for error in all_codes() {
            let row = rows
                .iter()
                .find(|row| row.matches(api, error))
                .unwrap_or_else(|| panic!("docs/protocol.md: no row matches {api:?} {error:?}"));
            assert_eq!(
                documented_action(row, api, error),
                action_for(api, error),
                "docs/protocol.md:{} disagrees with action_for for {api:?} {error:?} (code {})",
                row.line,
                error.code()
            );
            checked += 1;
        }
    }
    assert!(
        checked > 5 * 130,
        "only {checked} (API, code) pairs checked"
    );
}

#[test]
fn every_row_of_the_doc_table_is_reachable() {
    let rows = doc_rows();
    for (i, row) in rows.iter().enumerate() {
        let reachable = APIS.into_iter().any(|api| {
            all_codes().any(|error| rows.iter().position(|r| r.matches(api, error)) == Some(i))
        });
        assert!(
            reachable,
            "docs/protocol.md:{}: an earlier row shadows this one",
            row.line
        );
    }
}

/// The `E::Variant` names in `action_for`'s match arms.
fn codes_named_by_action_for() -> Vec<ResponseError> {
    let body = ACTION_RS
        .split_once("fn action_for")
        .expect("action.rs defines action_for")
        .1;
    let mut codes: Vec<ResponseError> = body
        .split("E::")
        .skip(1)
        .map(|rest| {
            let name: String = rest
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            all_codes()
                .find(|e| format!("{e:?}") == name)
                .unwrap_or_else(|| panic!("action.rs names E::{name}, not a Kafka error code"))
        })
        .collect();
    codes.dedup();
    codes
}

#[test]
fn every_code_with_its_own_action_has_its_own_row() {
    let named: Vec<ResponseError> = doc_rows()
        .iter()
        .filter_map(|row| match row.codes {
            Codes::One(error) => Some(error),
            Codes::Any | Codes::AnyRetriable => None,
        })
        .collect();
    let from_action_for = codes_named_by_action_for();
    assert!(
        from_action_for.len() >= 10,
        "found only {from_action_for:?} in action_for"
    );
    for error in ERROR_TABLE_CODES.into_iter().chain(from_action_for) {
        assert!(
            named.contains(&error),
            "docs/protocol.md: the error table has no row for {error:?} (code {})",
            error.code()
        );
    }
}
