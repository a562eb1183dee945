//! The docs a newcomer reads first can be trusted (issue 26, item 8): every `mbxstress ...`
//! command shown in a code block of README.md and docs/*.md, and in the help's examples
//! (src/cli.rs), parses as written; every relative link and `#anchor` in them resolves; the
//! README stays a front page (under 12 KB), the manual being docs/guide.md.
//!
//! A command is checked by running it with the hidden `--check-args` flag: the binary parses the
//! whole command line as it would (subcommand path, flag names, value syntax, required and
//! conflicting flags) and exits 0 without doing anything, or exits 2 naming what it refused.
//! The `size` examples, pure arithmetic, are also run for real.
//! Conventions of the docs' examples: `...` stands for more of the same flags and is left out;
//! `cargo run --release -- ARGS` is `mbxstress ARGS`; in a block showing a session (`$ ` lines),
//! only the `$ ` lines are commands, the rest is output.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{mbx_in, scratch};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every page under docs/.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Splits a command line as a shell would for these examples: blanks separate words, '...' and
/// "..." quote, `#` at the start of a word begins a comment. Backslashes are kept (Windows paths).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None if c == '#' && !in_word => break,
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// The arguments of one example line, if it is an `mbxstress` command.
fn command_args(line: &str) -> Option<Vec<String>> {
    let w = words(line);
    let args = match w.first().map(String::as_str) {
        Some("mbxstress" | "mbxstress.exe") => w[1..].to_vec(),
        Some("cargo") if w.get(1).map(String::as_str) == Some("run") => {
            let dashes = w.iter().position(|x| x == "--")?;
            w[dashes + 1..].to_vec()
        }
        _ => return None,
    };
    // `mbxstress = "..."` is a hosts-file key, `mbxstress doctor: 14 checks` a line of output.
    if args.first().is_some_and(|a| a == "=" || a.ends_with(':')) {
        return None;
    }
    Some(args.into_iter().filter(|a| a != "...").collect())
}

/// Joins shell continuation lines (a trailing backslash); each line with the index of its first.
fn joined(lines: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut first = 0;
    for (i, l) in lines.iter().enumerate() {
        if cur.is_empty() {
            first = i;
        }
        let t = l.trim_end();
        if let Some(head) = t.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
        } else {
            cur.push_str(t);
            out.push((first, std::mem::take(&mut cur)));
        }
    }
    if !cur.is_empty() {
        out.push((first, cur));
    }
    out
}

/// Every `mbxstress` command in the markdown's shell code blocks, with its line number.
fn markdown_commands(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i + 1;
        let end = (start..lines.len())
            .find(|&j| lines[j].trim_start().starts_with("```"))
            .unwrap_or(lines.len());
        i = end + 1;
        if !matches!(
            lang.trim(),
            "" | "sh" | "bash" | "shell" | "console" | "bat" | "cmd"
        ) {
            continue;
        }
        let block: Vec<&str> = lines[start..end].iter().map(|l| l.trim()).collect();
        let session = block.iter().any(|l| l.starts_with("$ "));
        for (k, line) in joined(&block) {
            let n = start + k + 1;
            let line = line.trim();
            let line = match (session, line.strip_prefix("$ ")) {
                (true, Some(cmd)) => cmd,
                (true, None) => continue,
                (false, _) => line,
            };
            if let Some(args) = command_args(line) {
                out.push((n, args));
            }
        }
    }
    out
}

/// The examples of the help texts: `  mbxstress ...` lines (and `Example: mbxstress ...`) of the
/// string constants in src/cli.rs, a description after three blanks left out.
fn help_commands(source: &str) -> Vec<(usize, Vec<String>)> {
    let text = source.replace("\\\\", "\\").replace("\\\"", "\"");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let cmd = l
            .strip_prefix("  mbxstress ")
            .or_else(|| l.strip_prefix("Example: mbxstress "));
        let Some(mut cmd) = cmd.map(|c| c.to_string()) else {
            i += 1;
            continue;
        };
        let n = i + 1;
        while cmd.trim_end().ends_with('\\') && i + 1 < lines.len() {
            cmd = format!(
                "{} {}",
                cmd.trim_end().trim_end_matches('\\'),
                lines[i + 1].trim_start()
            );
            i += 1;
        }
        i += 1;
        let cmd = cmd
            .trim_end_matches("\";")
            .split("   ")
            .next()
            .unwrap_or("");
        if let Some(args) = command_args(&format!("mbxstress {cmd}")) {
            out.push((n, args));
        }
    }
    out
}

/// Runs each command with `--check-args`; returns the ones the binary refused.
fn refused(commands: &[(String, usize, Vec<String>)], dir: &Path) -> Vec<(String, String, String)> {
    let mut bad = Vec::new();
    for (file, line, args) in commands {
        let mut argv: Vec<&str> = args.iter().map(String::as_str).collect();
        argv.push("--check-args");
        let run = mbx_in(Some(dir), &argv);
        if run.code != 0 {
            bad.push((
                format!("{file}:{line}"),
                format!("mbxstress {}", args.join(" ")),
                format!("exit {}: {}", run.code, run.stderr.trim()),
            ));
        }
    }
    bad
}

#[test]
fn every_command_in_the_docs_and_the_help_parses() {
    let dir = scratch("docs-commands");
    let mut commands = Vec::new();
    let mut per_file = std::collections::BTreeMap::new();
    for f in doc_files() {
        let name = f
            .strip_prefix(root())
            .unwrap_or(&f)
            .display()
            .to_string()
            .trim_start_matches("./")
            .to_string();
        let found = markdown_commands(&read(&f));
        per_file.insert(name.clone(), found.len());
        commands.extend(found.into_iter().map(|(n, a)| (name.clone(), n, a)));
    }
    let cli = root().join("crates/mbxstress/src/cli.rs");
    let help = help_commands(&read(&cli));
    per_file.insert("src/cli.rs".into(), help.len());
    commands.extend(
        help.into_iter()
            .map(|(n, a)| ("src/cli.rs".to_string(), n, a)),
    );
    // The extraction finds what is there: a broken one must not pass by finding nothing.
    for (file, at_least) in [("README.md", 12), ("docs/guide.md", 25), ("src/cli.rs", 20)] {
        let n = per_file.get(file).copied().unwrap_or(0);
        assert!(n >= at_least, "{file}: {n} commands found: {per_file:?}");
    }
    let subcommands: BTreeSet<&str> = commands
        .iter()
        .filter_map(|(_, _, a)| a.first().map(String::as_str))
        .collect();
    for sub in [
        "run", "find-max", "export", "doctor", "size", "prepare", "verify", "iobench", "report",
        "compare", "import", "esrp", "fleet",
    ] {
        assert!(
            subcommands.contains(sub),
            "no example of `mbxstress {sub}` in the docs: {subcommands:?}"
        );
    }
    let bad = refused(&commands, &dir);
    assert!(
        bad.is_empty(),
        "{} of {} documented commands do not parse:\n{}",
        bad.len(),
        commands.len(),
        bad.iter()
            .map(|(at, cmd, why)| format!("{at}: {cmd}\n  {why}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Nothing ran: --check-args only parses.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("scratch")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(left.is_empty(), "a checked command wrote {left:?}");

    // Where running is cheap, run: every documented `size` (pure arithmetic; a profile it
    // writes lands in a scratch folder) that needs no input file of the reader's.
    let run_dir = scratch("docs-size-commands");
    let mut sized = 0;
    for (file, line, args) in &commands {
        if args.first().map(String::as_str) != Some("size") || args.iter().any(|a| a == "--input") {
            continue;
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = mbx_in(Some(&run_dir), &argv);
        assert_eq!(
            run.code,
            0,
            "{file}:{line}: mbxstress {}\n{}",
            args.join(" "),
            run.stderr
        );
        sized += 1;
    }
    assert!(sized >= 8, "{sized} size commands run");
}

/// The check can fail: an unknown flag, a wrong subcommand path, a bad value and a missing
/// required flag are refused by `--check-args`, and the extraction sees through quotes,
/// comments, continuations and `...`.
#[test]
fn the_command_check_refuses_what_does_not_parse() {
    let dir = scratch("docs-commands-bad");
    let md = "```sh\n\
              mbxstress run --no-such-flag 1   # a comment\n\
              mbxstress fleet --hosts h.toml\n\
              mbxstress iobench --file f --rw sideways\n\
              mbxstress fleet run --duration 2h\n\
              mbxstress run --map-path 'E:\\=/mnt/e/' \\\n  --db-path /a ... --threads 4\n\
              ```\n\
              ```toml\nmbxstress = \"/opt/mbxstress\"\n```\n";
    let found = markdown_commands(md);
    assert_eq!(found.len(), 5, "{found:?}");
    assert_eq!(found[0].1, ["run", "--no-such-flag", "1"]);
    assert_eq!(
        found[4].1,
        [
            "run",
            "--map-path",
            "E:\\=/mnt/e/",
            "--db-path",
            "/a",
            "--threads",
            "4"
        ]
    );
    let commands: Vec<_> = found
        .into_iter()
        .map(|(n, a)| ("test.md".to_string(), n, a))
        .collect();
    let bad = refused(&commands, &dir);
    let refused_lines: Vec<&str> = bad.iter().map(|(at, _, _)| at.as_str()).collect();
    assert_eq!(
        refused_lines,
        ["test.md:2", "test.md:3", "test.md:4", "test.md:5"],
        "{bad:?}"
    );
    assert!(bad[0].2.contains("--no-such-flag"), "{:?}", bad[0]);
    assert!(
        bad.iter().all(|(_, _, why)| why.starts_with("exit 2")),
        "{bad:?}"
    );
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, blanks to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown file's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut code = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            code = !code;
        } else if !code && l.starts_with('#') {
            out.insert(slug(l.trim_start_matches('#')));
        }
    }
    out
}

/// Every relative link of README.md and docs/*.md names a file that exists, and its `#anchor`
/// a heading of that file: the README's links into the guide, and the guide's own.
#[test]
fn every_link_in_the_docs_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in doc_files() {
        let text = read(&f);
        for (n, line) in text.lines().enumerate() {
            for part in line.split("](").skip(1) {
                let Some(target) = part.split(')').next() else {
                    continue;
                };
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target, None),
                };
                let file = if path.is_empty() {
                    f.clone()
                } else {
                    f.parent().expect("folder").join(path)
                };
                let at = format!("{}:{}: {target}", f.display(), n + 1);
                if !file.exists() {
                    bad.push(format!("{at}: no such file"));
                } else if let Some(a) = anchor {
                    if !anchors(&read(&file)).contains(a) {
                        bad.push(format!("{at}: no heading with this anchor"));
                    }
                }
            }
        }
    }
    assert!(checked >= 15, "{checked} links checked");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The README is the front page (under 12 KB), the manual docs/guide.md, and neither says
/// that what exists is still to come.
#[test]
fn the_readme_is_a_front_page() {
    let readme = read(&root().join("README.md"));
    assert!(readme.len() < 12_000, "README.md is {} bytes", readme.len());
    assert!(
        readme.contains("(docs/guide.md)"),
        "the README links the guide"
    );
    let guide = read(&root().join("docs/guide.md"));
    for section in [
        "Safety",
        "Exit codes",
        "Disk subsystem throughput",
        "Windows",
    ] {
        assert!(guide.contains(section), "docs/guide.md lacks {section}");
    }
    for (file, stale) in [
        ("README.md", "Multi-server runs come next"),
        ("docs/guide.md", "Multi-server runs come next"),
        ("docs/method.md", "No automatic tuning yet"),
        ("docs/method.md", "importing Jetstress XML configurations"),
        ("docs/method.md", "One thread drives everything"),
    ] {
        assert!(
            !read(&root().join(file)).contains(stale),
            "{file} still says '{stale}'"
        );
    }
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(
        slug(" `mbxstress run`: does this storage carry N mailboxes of this profile?"),
        "mbxstress-run-does-this-storage-carry-n-mailboxes-of-this-profile"
    );
    assert_eq!(
        slug(" Reports: `report`, `esrp`, `import`, `compare`"),
        "reports-report-esrp-import-compare"
    );
}

/// The commands `mbxstress --help` lists, with their subcommands ("fleet run", "loadgen init"),
/// read from the help of each level: what a user can type.
fn commands_in_help(prefix: &[&str]) -> Vec<String> {
    let mut args: Vec<&str> = prefix.to_vec();
    args.push("--help");
    let run = crate::common::mbx(&args);
    assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    let mut out = Vec::new();
    let mut in_commands = false;
    for line in run.stdout.lines() {
        if line == "Commands:" {
            in_commands = true;
            continue;
        }
        if in_commands {
            // "  name   description"; a description's continuation is indented further; the
            // list ends at a blank line.
            if line.is_empty() {
                break;
            }
            let Some(name) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) else {
                continue;
            };
            let name = name.split_whitespace().next().unwrap_or_default();
            if name.is_empty() || name == "help" {
                continue;
            }
            let mut path: Vec<&str> = prefix.to_vec();
            path.push(name);
            let below = commands_in_help(&path);
            if below.is_empty() {
                out.push(path.join(" "));
            } else {
                out.extend(below);
            }
        }
    }
    out
}

/// Issue 35, item 8: docs/guide.md's "What works today" lists every command of this version, and
/// nothing that is not one; the top-level help describes the three jobs; the README names the
/// binary's path, `cargo install` and the first build's time, and its Quick start has exactly the
/// two commands.
#[test]
fn the_guides_what_works_list_is_the_commands_that_exist() {
    let guide = read(&root().join("docs/guide.md"));
    let start = guide.find("## What works today").expect("the section");
    let section = &guide[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    assert!(
        !section.contains("not built yet"),
        "the guide still says a job is not built"
    );
    // The bullets' bold command names: "- **`fleet run`**".
    let mut listed: Vec<String> = section
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- **`"))
        .filter_map(|l| l.split_once("`**").map(|(name, _)| name.to_string()))
        .collect();
    listed.sort();
    let mut commands = commands_in_help(&[]);
    commands.sort();
    assert!(commands.len() > 15, "{commands:?}");
    assert_eq!(
        listed, commands,
        "docs/guide.md's What works today vs --help"
    );

    let help = crate::common::mbx(&["--help"]);
    for job in ["Sizing:", "Storage validation:", "Client load:", "loadgen"] {
        assert!(
            help.stdout.contains(job),
            "--help lacks {job}: {}",
            help.stdout
        );
    }

    let readme = read(&root().join("README.md"));
    for needed in [
        "target/release/mbxstress",
        "cargo install --path crates/mbxstress",
        "The first build takes minutes",
    ] {
        assert!(readme.contains(needed), "README.md lacks '{needed}'");
    }
    let quick = &readme[readme.find("## Quick start").expect("Quick start")..];
    let quick = &quick[..quick[3..].find("\n## ").map_or(quick.len(), |e| e + 3)];
    let block = &quick[quick.find("```sh\n").expect("a code block") + 6..];
    let block = &block[..block.find("```").expect("its end")];
    let commands: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        commands.len(),
        2,
        "the Quick start has two commands: {commands:?}"
    );
    assert!(commands[0].starts_with("cargo run --release -- run"));
    assert!(commands[1].starts_with("cargo test --workspace"));
}
