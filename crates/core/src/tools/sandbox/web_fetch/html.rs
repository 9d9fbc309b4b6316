//! HTML to readable markdown: the page's main content, its title as a heading, links made
//! absolute so that the model can fetch them next.

use std::rc::Rc;

use htmd::{HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;
use reqwest::Url;

/// Elements whose content is never worth the model's context: code, styling, site
/// chrome. `head` goes too: its `<title>` is rendered separately.
const SKIPPED: &[&str] = &[
    "script", "style", "nav", "footer", "noscript", "svg", "head", "template", "iframe",
];

/// Converts an HTML document fetched from `page` to markdown. The content is the first
/// `<main>`, else every outermost `<article>`, else the `<body>`; the `<title>` becomes a
/// top-level heading unless the content already starts with it.
pub(super) fn to_markdown(html: &str, page: &Url) -> std::io::Result<String> {
    // The parser and the converter recurse once per level: a hostile page of a few
    // thousand nested tags would overflow the thread's stack and abort the process.
    let depth = nesting_depth(html);
    if depth > MAX_NESTING {
        return Err(std::io::Error::other(format!(
            "the page nests its tags about {depth} levels deep (more than {MAX_NESTING}); \
             it is not converted"
        )));
    }
    let converter = HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let document = converter.html_to_tree(html)?;

    let base = find_first(&document, "base")
        .and_then(|b| attribute(&b, "href"))
        .and_then(|href| page.join(&href).ok())
        .unwrap_or_else(|| page.clone());
    absolutize_links(&document, &base);

    let title = find_first(&document, "title")
        .map(|t| collapse_whitespace(&text_content(&t)))
        .unwrap_or_default();

    let roots = match find_first(&document, "main") {
        Some(main) => vec![main],
        None => {
            let mut articles = Vec::new();
            outermost(&document, "article", &mut articles);
            if articles.is_empty() {
                // Not `unwrap_or(document)`: dropping the document empties every node
                // below it, even those still referenced.
                vec![find_first(&document, "body").unwrap_or_else(|| Rc::clone(&document))]
            } else {
                articles
            }
        }
    };
    let parts: Vec<String> = roots
        .iter()
        .map(|root| converter.tree_to_markdown(root))
        .filter(|md| !md.trim().is_empty())
        .collect();
    let body = collapse_blank_lines(&parts.join("\n\n"));

    let heading = format!("# {title}");
    let starts_with_title = body.lines().next().is_some_and(|l| l.trim() == heading);
    Ok(if title.is_empty() || starts_with_title {
        body
    } else if body.is_empty() {
        heading
    } else {
        format!("{heading}\n\n{body}")
    })
}

/// The element's local tag name, if it is an element.
/// The deepest tag nesting converted; real pages stay far below (a few dozen levels).
const MAX_NESTING: usize = 512;

/// Elements that never have a closing tag, so they do not nest.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// A cheap upper estimate of how deeply `html` nests its elements: opening tags deepen,
/// closing tags return, void and self-closing tags, comments and declarations do not count.
fn nesting_depth(html: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let end = rest.find('>').unwrap_or(rest.len());
        let inner = &rest[..end];
        if let Some(closing) = inner.strip_prefix('/') {
            if closing.starts_with(|c: char| c.is_ascii_alphabetic()) {
                depth = depth.saturating_sub(1);
            }
        } else if inner.starts_with(|c: char| c.is_ascii_alphabetic()) && !inner.ends_with('/') {
            let name: String = inner
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            if !VOID.contains(&name.as_str()) {
                depth += 1;
                deepest = deepest.max(depth);
            }
        }
        rest = &rest[end..];
    }
    deepest
}

fn tag(node: &Node) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

/// The value of one attribute of an element.
fn attribute(node: &Node, attr_name: &str) -> Option<String> {
    match &node.data {
        NodeData::Element { attrs, .. } => attrs
            .borrow()
            .iter()
            .find(|a| &*a.name.local == attr_name)
            .map(|a| a.value.to_string()),
        _ => None,
    }
}

/// The first element named `name`, depth first.
fn find_first(node: &Rc<Node>, name: &str) -> Option<Rc<Node>> {
    if tag(node) == Some(name) {
        return Some(Rc::clone(node));
    }
    node.children
        .borrow()
        .iter()
        .find_map(|child| find_first(child, name))
}

/// Every element named `name` that is not inside another one.
fn outermost(node: &Rc<Node>, name: &str, found: &mut Vec<Rc<Node>>) {
    if tag(node) == Some(name) {
        found.push(Rc::clone(node));
        return;
    }
    for child in node.children.borrow().iter() {
        outermost(child, name, found);
    }
}

/// The text of a node and its descendants.
fn text_content(node: &Node) -> String {
    let mut text = String::new();
    push_text(node, &mut text);
    text
}

fn push_text(node: &Node, text: &mut String) {
    if let NodeData::Text { contents } = &node.data {
        text.push_str(&contents.borrow());
    }
    for child in node.children.borrow().iter() {
        push_text(child, text);
    }
}

/// Rewrites link and image targets relative to `base` as absolute URLs, and drops inline
/// `data:` images, whose base64 text would flood the output.
fn absolutize_links(node: &Node, base: &Url) {
    if let NodeData::Element { name, attrs, .. } = &node.data {
        let target = match &*name.local {
            "a" | "area" => Some("href"),
            "img" => Some("src"),
            _ => None,
        };
        if let Some(target) = target {
            let mut attrs = attrs.borrow_mut();
            attrs.retain(|a| {
                !(&*a.name.local == "src" && a.value.trim_start().starts_with("data:"))
            });
            for attr in attrs.iter_mut().filter(|a| &*a.name.local == target) {
                if let Ok(absolute) = base.join(attr.value.trim()) {
                    attr.value = absolute.as_str().into();
                }
            }
        }
    }
    for child in node.children.borrow().iter() {
        absolutize_links(child, base);
    }
}

/// Runs of whitespace as single spaces, trimmed.
fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most one blank line in a row, no trailing whitespace on lines.
fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.trim().lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deeply_nested_pages_are_refused_before_parsing() {
        assert_eq!(
            nesting_depth("<p>a<br>b<img src=x/><br/></p><div><b>c</b></div>"),
            2
        );
        assert_eq!(nesting_depth("<!-- x --><!DOCTYPE html><a></a>"), 1);
        let deep = "<div>".repeat(5_000);
        let page = Url::parse("http://x/").unwrap();
        let err = to_markdown(&deep, &page).unwrap_err().to_string();
        assert!(err.contains("5000 levels"), "{err}");
        assert!(to_markdown(&"<div>".repeat(100), &page).is_ok());
    }

    fn md(html: &str) -> String {
        to_markdown(
            html,
            &Url::parse("https://example.com/dir/page.html").unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn prefers_main_and_makes_links_absolute() {
        let out = md(
            "<html><head><title> The\n Title </title><style>p{color:red}</style></head>\
             <body><nav><a href='/'>Home</a></nav><p>outside</p>\
             <main><h2>Part</h2><p>See <a href='other.html'>other</a> and \
             <a href='https://x.org/a'>x</a>.</p><img src='data:image/png;base64,AAAA' alt='inline'>\
             <img src='pic.png' alt='pic'></main><footer>foot</footer></body></html>",
        );
        assert_eq!(
            out,
            "# The Title\n\n## Part\n\nSee [other](https://example.com/dir/other.html) and \
             [x](https://x.org/a).\n\n![pic](https://example.com/dir/pic.png)"
        );
    }

    #[test]
    fn every_outermost_article_else_the_body() {
        let out = md(
            "<body><article><p>one</p><article><p>inner</p></article></article>\
             <div>between</div><article><p>two</p></article></body>",
        );
        assert_eq!(out, "one\n\ninner\n\ntwo");
        let out = md("<title>T</title><body><nav>menu</nav><p>body text</p>\
             <script>var x = 1;</script><noscript>enable js</noscript><svg><text>s</text></svg></body>");
        assert_eq!(out, "# T\n\nbody text");
    }

    #[test]
    fn title_is_not_repeated_and_base_is_honoured() {
        let out = md(
            "<head><title>Same</title><base href='https://cdn.example.org/root/'></head>\
             <body><article><h1>Same</h1><p><a href='x'>x</a></p></article></body>",
        );
        assert_eq!(out, "# Same\n\n[x](https://cdn.example.org/root/x)");
        assert_eq!(md("<title>Only</title>"), "# Only");
        assert_eq!(md(""), "");
    }
}
