//! `check --instance-filter EXPR`: the instances a jq expression selects, as `agent check
//! --instance-filter '.ip_address == "127.0.0.51"'` takes it. The subset of jq read here:
//! paths (`.`, `.a`, `.a.b`, `.a[0]`), strings, numbers, `true`, `false`, `null`, comparisons
//! (`==`, `!=`, `<`, `<=`, `>`, `>=`) of any two of those, `and`, `or`, pipes (`|`), `not` as
//! jq's filter (`.x | not`), `select(f)` and parentheses. An instance is selected when the
//! filter gives a value that is neither false nor null (`select` gives the instance itself);
//! no output, `false` or `null` leaves it out. Anything else is refused with the position
//! where reading stopped.

use serde_json::Value;

use crate::Error;

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceFilter {
    expr: Expr,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    /// A path from the input (`.` is the empty path); missing is null, as in jq.
    Path(Vec<Step>),
    Literal(Value),
    Pipe(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Compare(Box<Expr>, Op, Box<Expr>),
    /// jq's `not`: the input's truth, negated.
    Not,
    /// jq's `select(f)`: the input when `f` of it is true, else no output.
    Select(Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Path(Vec<Step>),
    Op(Op),
    Literal(Value),
    And,
    Or,
    Not,
    Select,
    Pipe,
    Open,
    Close,
}

impl InstanceFilter {
    /// Parses `text`; the error says what was expected and at which character.
    pub fn parse(text: &str) -> Result<InstanceFilter, Error> {
        let tokens = tokenize(text)?;
        let mut p = Parser { tokens, pos: 0 };
        let expr = p.pipe()?;
        if p.pos != p.tokens.len() {
            let hint = if p.pos > 0 && p.tokens[p.pos - 1] == Token::Not {
                ": jq's `not` is a filter of its input, with no argument (write `.x | not`)"
            } else {
                ""
            };
            return Err(Error::Filter(format!(
                "unexpected {} after a complete expression{hint}",
                describe(&p.tokens[p.pos])
            )));
        }
        Ok(InstanceFilter { expr })
    }

    /// Whether `instance` is selected.
    pub fn matches(&self, instance: &Value) -> bool {
        eval(&self.expr, instance).is_some_and(|v| truthy(&v))
    }
}

/// jq's truth: everything but false and null.
fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Null | Value::Bool(false))
}

/// The filter's output for `input`: one value, or none (`select` that did not keep it).
fn eval(e: &Expr, input: &Value) -> Option<Value> {
    match e {
        Expr::Path(path) => Some(lookup(input, path).cloned().unwrap_or(Value::Null)),
        Expr::Literal(v) => Some(v.clone()),
        Expr::Pipe(a, b) => eval(a, input).and_then(|x| eval(b, &x)),
        Expr::Or(a, b) => {
            if truthy(&eval(a, input)?) {
                Some(Value::Bool(true))
            } else {
                eval(b, input).map(|v| Value::Bool(truthy(&v)))
            }
        }
        Expr::And(a, b) => {
            if !truthy(&eval(a, input)?) {
                Some(Value::Bool(false))
            } else {
                eval(b, input).map(|v| Value::Bool(truthy(&v)))
            }
        }
        Expr::Compare(a, op, b) => {
            let (got, lit) = (eval(a, input)?, eval(b, input)?);
            Some(Value::Bool(match op {
                Op::Eq => equal(&got, &lit),
                Op::Ne => !equal(&got, &lit),
                _ => match order(&got, &lit) {
                    Some(o) => match op {
                        Op::Lt => o.is_lt(),
                        Op::Le => o.is_le(),
                        Op::Gt => o.is_gt(),
                        Op::Ge => o.is_ge(),
                        Op::Eq | Op::Ne => false,
                    },
                    None => false,
                },
            }))
        }
        Expr::Not => Some(Value::Bool(!truthy(input))),
        Expr::Select(f) => {
            let keep = eval(f, input).is_some_and(|v| truthy(&v));
            keep.then(|| input.clone())
        }
    }
}

fn lookup<'a>(mut v: &'a Value, path: &[Step]) -> Option<&'a Value> {
    for step in path {
        v = match step {
            Step::Key(k) => v.get(k)?,
            Step::Index(i) => v.get(*i)?,
        };
    }
    Some(v)
}

/// Numbers compare by value (a YAML `8080` equals `8080.0`), everything else exactly.
fn equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn order(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn describe(t: &Token) -> String {
    match t {
        Token::Path(_) => "a path".into(),
        Token::Op(_) => "a comparison".into(),
        Token::Literal(v) => format!("the value {v}"),
        Token::And => "`and`".into(),
        Token::Or => "`or`".into(),
        Token::Not => "`not`".into(),
        Token::Select => "`select`".into(),
        Token::Pipe => "`|`".into(),
        Token::Open => "`(`".into(),
        Token::Close => "`)`".into(),
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn pipe(&mut self) -> Result<Expr, Error> {
        let mut left = self.or()?;
        while self.peek() == Some(&Token::Pipe) {
            self.pos += 1;
            left = Expr::Pipe(Box::new(left), Box::new(self.or()?));
        }
        Ok(left)
    }

    fn or(&mut self) -> Result<Expr, Error> {
        let mut left = self.and()?;
        while self.peek() == Some(&Token::Or) {
            self.pos += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, Error> {
        let mut left = self.compare()?;
        while self.peek() == Some(&Token::And) {
            self.pos += 1;
            left = Expr::And(Box::new(left), Box::new(self.compare()?));
        }
        Ok(left)
    }

    fn compare(&mut self) -> Result<Expr, Error> {
        let left = self.term()?;
        if let Some(Token::Op(op)) = self.peek().cloned() {
            self.pos += 1;
            if self.peek().is_none() {
                return Err(Error::Filter("a comparison without its value".into()));
            }
            let right = self.term()?;
            return Ok(Expr::Compare(Box::new(left), op, Box::new(right)));
        }
        Ok(left)
    }

    /// `( pipe )` after the opening parenthesis was read.
    fn group(&mut self) -> Result<Expr, Error> {
        let e = self.pipe()?;
        if self.peek() != Some(&Token::Close) {
            return Err(Error::Filter("a `(` without its `)`".into()));
        }
        self.pos += 1;
        Ok(e)
    }

    fn term(&mut self) -> Result<Expr, Error> {
        let Some(t) = self.tokens.get(self.pos).cloned() else {
            return Err(Error::Filter("an empty expression".into()));
        };
        self.pos += 1;
        match t {
            Token::Path(path) => Ok(Expr::Path(path)),
            Token::Literal(v) => Ok(Expr::Literal(v)),
            Token::Not => Ok(Expr::Not),
            Token::Open => self.group(),
            Token::Select => {
                if self.peek() != Some(&Token::Open) {
                    return Err(Error::Filter(
                        "`select` takes its condition in parentheses: select(.x)".into(),
                    ));
                }
                self.pos += 1;
                Ok(Expr::Select(Box::new(self.group()?)))
            }
            other => Err(Error::Filter(format!(
                "expected a path such as .name, a value, `not`, `select(…)` or `(`, found {}",
                describe(&other)
            ))),
        }
    }
}

// long: one match arm per token of the jq subset, each with its own error
fn tokenize(text: &str) -> Result<Vec<Token>, Error> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize, what: &str| Error::Filter(format!("character {}: {what}", i + 1));
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            '|' => {
                out.push(Token::Pipe);
                i += 1;
            }
            ')' => {
                out.push(Token::Close);
                i += 1;
            }
            '.' => {
                let mut path = Vec::new();
                while i < chars.len() && (chars[i] == '.' || chars[i] == '[') {
                    if chars[i] == '.' {
                        i += 1;
                        let start = i;
                        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                            i += 1;
                        }
                        if start == i {
                            // `.` alone is the input itself; `..` is not taken.
                            if i < chars.len() && chars[i] == '.' {
                                return Err(at(start, "a `.` without a key after it"));
                            }
                            continue;
                        }
                        path.push(Step::Key(chars[start..i].iter().collect()));
                    } else {
                        i += 1;
                        let start = i;
                        while i < chars.len() && chars[i].is_ascii_digit() {
                            i += 1;
                        }
                        let n = chars[start..i].iter().collect::<String>();
                        if n.is_empty() || i >= chars.len() || chars[i] != ']' {
                            return Err(at(start, "an index such as [0]"));
                        }
                        i += 1;
                        path.push(Step::Index(
                            n.parse().map_err(|_| at(start, "index too large"))?,
                        ));
                    }
                }
                out.push(Token::Path(path));
            }
            '"' => {
                let start = i;
                i += 1;
                let mut s = String::new();
                loop {
                    match chars.get(i) {
                        None => return Err(at(start, "a string without its closing quote")),
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') => {
                            let e = chars.get(i + 1).copied();
                            s.push(match e {
                                Some('n') => '\n',
                                Some('t') => '\t',
                                Some(c @ ('"' | '\\' | '/')) => c,
                                _ => return Err(at(i, "an escape jq does not take here")),
                            });
                            i += 2;
                        }
                        Some(&c) => {
                            s.push(c);
                            i += 1;
                        }
                    }
                }
                out.push(Token::Literal(Value::String(s)));
            }
            '=' | '!' | '<' | '>' => {
                let two = chars.get(i + 1) == Some(&'=');
                let op = match (c, two) {
                    ('=', true) => Op::Eq,
                    ('!', true) => Op::Ne,
                    ('<', false) => Op::Lt,
                    ('<', true) => Op::Le,
                    ('>', false) => Op::Gt,
                    ('>', true) => Op::Ge,
                    _ => return Err(at(i, "`==` or `!=` (jq compares with two characters)")),
                };
                out.push(Token::Op(op));
                i += if two { 2 } else { 1 };
            }
            c if c == '-' || c.is_ascii_digit() => {
                let start = i;
                i += 1;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '.' | '+' | '-'))
                {
                    i += 1;
                }
                let n: String = chars[start..i].iter().collect();
                let v: f64 = n
                    .parse()
                    .map_err(|_| at(start, &format!("`{n}` is not a number")))?;
                let num = serde_json::Number::from_f64(v)
                    .ok_or_else(|| at(start, "not a finite number"))?;
                out.push(Token::Literal(Value::Number(num)));
            }
            c if c.is_alphabetic() => {
                let start = i;
                while i < chars.len() && chars[i].is_alphanumeric() {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push(match word.as_str() {
                    "and" => Token::And,
                    "or" => Token::Or,
                    "not" => Token::Not,
                    "select" => Token::Select,
                    "true" => Token::Literal(Value::Bool(true)),
                    "false" => Token::Literal(Value::Bool(false)),
                    "null" => Token::Literal(Value::Null),
                    _ => {
                        return Err(at(
                            start,
                            &format!("`{word}` is not taken here (paths, values, comparisons, and, or, |, not, select(), parentheses)"),
                        ));
                    }
                });
            }
            _ => return Err(at(i, &format!("`{c}` is not taken here"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(expr: &str, v: Value) -> bool {
        InstanceFilter::parse(expr).unwrap().matches(&v)
    }

    #[test]
    fn the_agents_example_and_the_rest_of_the_subset() {
        let a = json!({"ip_address": "127.0.0.51", "port": 8080, "tags": ["x"], "tls": {"verify": false}});
        assert!(sel(r#".ip_address == "127.0.0.51""#, a.clone()));
        assert!(!sel(r#".ip_address == "127.0.0.52""#, a.clone()));
        assert!(sel(".port == 8080 and .port >= 8000", a.clone()));
        assert!(sel(".port < 80 or .tls.verify == false", a.clone()));
        assert!(sel(r#".tags[0] == "x""#, a.clone()));
        assert!(sel(".port", a.clone()));
        assert!(!sel(".tls.verify", a.clone()));
        assert!(!sel(".missing", a.clone()));
        assert!(sel("(.missing or .tls.verify) | not", a.clone()));
        assert!(sel(".tls.verify | not", a.clone()));
        assert!(sel("select(.port == 8080)", a.clone()));
        assert!(!sel("select(.port == 80)", a.clone()));
        assert!(sel(".tls | .verify == false", a.clone()));
        assert!(sel(r#"select(.tags[0] == "x") | .port > 8000"#, a.clone()));
        assert!(sel(".port == .port and (.tls.verify | not)", a.clone()));
        assert!(sel(". | .port", a.clone()));
        assert!(sel(".missing == null", a.clone()));
        assert!(sel(r#".name != "db""#, a));
    }

    #[test]
    fn what_is_not_read_is_refused_with_its_place() {
        for (bad, says) in [
            (".a = 1", "character 4"),
            (r#".a == "x"#, "closing quote"),
            ("select .a", "in parentheses"),
            ("not .a", "write `.x | not`"),
            ("not (.a)", "write `.x | not`"),
            ("..a", "without a key"),
            ("length", "`length` is not taken"),
            (".a ==", "without its value"),
            (".a .b", "after a complete expression"),
            ("", "empty"),
            ("(.a", "without its `)`"),
        ] {
            let e = InstanceFilter::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
