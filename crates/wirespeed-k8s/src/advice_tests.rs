//! Issue 48, item 5, for the refusals decided from the flags alone: each
//! refusal that names a value or a flag to use is followed here, and what
//! it names must then be accepted. The refusals decided against a cluster
//! are followed in the binary's cluster tests (docs/k8s.md lists both).

use crate::manifests::{self, parse_toleration};
use crate::nodes::NodeInfo;
use crate::paths::{PathKind, parse_pairs};
use crate::{NicSelector, Reach};

/// The text after `marker` up to the first of `ends`.
fn after<'t>(text: &'t str, marker: &str, ends: &[char]) -> &'t str {
    let rest = text
        .split_once(marker)
        .unwrap_or_else(|| panic!("{marker:?} not in {text:?}"))
        .1;
    rest.split(ends).next().unwrap_or(rest)
}

#[test]
fn a_bad_toleration_names_an_example_that_parses() {
    let e = parse_toleration("=x:NoSchedule").unwrap_err().to_string();
    let example = after(&e, "e.g. ", &[' ', ';', ')']);
    assert!(parse_toleration(example).is_ok(), "{e}");
}

#[test]
fn a_bad_reach_names_the_two_that_parse() {
    let e = "pods".parse::<Reach>().unwrap_err().to_string();
    let first = after(&e, "use ", &[' ']);
    let second = after(&e, ") or ", &[' ']);
    assert_eq!([first, second], Reach::NAMES, "{e}");
    for r in [first, second] {
        assert!(r.parse::<Reach>().is_ok(), "{r}");
    }
}

#[test]
fn a_bad_output_names_the_formats_that_render() {
    let objs = [serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1"})];
    let e = "xml".parse::<manifests::Output>().unwrap_err().to_string();
    let named = after(&e, "use ", &['\n']);
    let names: Vec<&str> = named.split(" or ").collect();
    assert_eq!(names, manifests::Output::NAMES, "{e}");
    for f in names {
        let o: manifests::Output = f.parse().unwrap();
        assert!(manifests::render(&objs, o).is_ok(), "{f}: {e}");
    }
}

#[test]
fn a_bad_path_lists_every_path_that_parses() {
    let e = PathKind::parse_list("pods-cross").unwrap_err().to_string();
    let listed = after(&e, "(use ", &[')']);
    let (names, service) = listed.split_once(", or ").expect("the service shorthand");
    let names: Vec<&str> = names.split(", ").collect();
    assert_eq!(names.len(), PathKind::ALL.len(), "{e}");
    for p in names {
        assert!(PathKind::parse_list(p).is_ok(), "{p}: {e}");
    }
    let service = service.split_whitespace().next().unwrap();
    assert_eq!(PathKind::parse_list(service).unwrap().len(), 2);
}

#[test]
fn a_bad_pairs_line_names_the_form_that_parses() {
    let nodes: Vec<NodeInfo> = ["n1", "n2"]
        .iter()
        .map(|n| NodeInfo {
            name: n.to_string(),
            ..NodeInfo::default()
        })
        .collect();
    let e = parse_pairs("n1 n2 n1\n", &nodes).unwrap_err().to_string();
    assert!(e.ends_with("write CLIENT SERVER"), "{e}");
    assert_eq!(parse_pairs("n1 n2\n", &nodes).unwrap().len(), 1);
    let e = parse_pairs("n1 n9\n", &nodes).unwrap_err().to_string();
    let listed = after(&e, "chosen nodes (", &[')']);
    let line = listed.replace(", ", " ");
    assert_eq!(parse_pairs(&line, &nodes).unwrap().len(), 1, "{e}");
}

#[test]
fn a_bad_nic_prefix_names_the_flag_that_takes_any_cel() {
    let e = NicSelector::IfNamePrefix("eth\"0".into())
        .cel()
        .unwrap_err()
        .to_string();
    assert!(e.contains("(or --nic-cel for any CEL)"), "{e}");
    let any = NicSelector::Cel("device.attributes[\"dra.net\"].ifName == \"eth\\\"0\"".into());
    assert!(any.cel().is_ok());
    assert!(NicSelector::IfNamePrefix("eth0".into()).cel().is_ok());
}

#[test]
fn each_output_and_reach_name_parses_to_its_value() {
    for (i, o) in manifests::Output::ALL.into_iter().enumerate() {
        assert_eq!(o as usize, i);
        assert_eq!(
            manifests::Output::NAMES[i]
                .parse::<manifests::Output>()
                .unwrap(),
            o
        );
    }
    for (i, r) in Reach::ALL.into_iter().enumerate() {
        assert_eq!(r as usize, i);
        assert_eq!(Reach::NAMES[i].parse::<Reach>().unwrap(), r);
        assert_eq!(r.to_string(), Reach::NAMES[i]);
    }
}
