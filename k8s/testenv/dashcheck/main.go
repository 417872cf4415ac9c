// dashcheck validates a Grafana dashboard JSON model with Grafana's own
// Foundation SDK (strict decoding: an unknown or mistyped field fails;
// then the SDK's Validate) and prints every Prometheus query the
// dashboard makes, one JSON object per line, for a test to run against a
// live Prometheus:
//
//	dashcheck contrib/grafana/wirespeed-watch.json
//
// Each line: {"where": "panel TITLE (A)", "expr": "...", "kind":
// "panel|variable|annotation"}. Exit 1 with the SDK's message on an
// invalid dashboard, or on a query that is not Prometheus's.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

type query struct {
	Where string `json:"where"`
	Kind  string `json:"kind"`
	Expr  string `json:"expr"`
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "dashcheck: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: dashcheck DASHBOARD.json")
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := real(d.UnmarshalJSONStrict(raw)); err != nil {
		fail("%s is not a valid dashboard: %v", os.Args[1], err)
	}
	if err := real(d.Validate()); err != nil {
		fail("%s does not validate: %v", os.Args[1], err)
	}
	// v0.0.22's PanelOrRowPanel drops every panel it decodes (the typed
	// nil above makes it return before keeping the panel), so the panels
	// are decoded again one by one, as strictly.
	var top struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		fail("%v", err)
	}
	var out []query
	for i, rp := range top.Panels {
		var p dashboard.Panel
		if err := real(p.UnmarshalJSONStrict(rp)); err != nil {
			fail("panels[%d]: %v", i, err)
		}
		if p.Type == "row" {
			fail("panels[%d]: rows are not used by this dashboard", i)
		}
		out = append(out, panelQueries(i, p, rp)...)
	}
	for _, v := range d.Templating.List {
		if v.Type != dashboard.VariableTypeQuery {
			continue
		}
		if v.Query == nil || v.Query.String == nil {
			fail("variable %s has no query string", v.Name)
		}
		out = append(out, query{"variable " + v.Name, "variable", *v.Query.String})
	}
	for _, a := range d.Annotations.List {
		if a.Expr == nil {
			fail("annotation %s has no expr", a.Name)
		}
		out = append(out, query{"annotation " + a.Name, "annotation", *a.Expr})
	}
	if len(out) == 0 {
		fail("%s makes no query", os.Args[1])
	}
	enc := json.NewEncoder(os.Stdout)
	for _, q := range out {
		if err := enc.Encode(q); err != nil {
			fail("%v", err)
		}
	}
}

// real: err, or nil for the SDK's empty error list (v0.0.22 returns
// cog.BuildErrors(nil) as a non-nil error when all is well).
func real(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// panelQueries: the panel's targets, each decoded strictly as a
// Prometheus query (again one by one: v0.0.22 drops a target whose
// strict decoding returns its typed nil).
func panelQueries(i int, p dashboard.Panel, raw json.RawMessage) []query {
	title := ""
	if p.Title != nil {
		title = *p.Title
	}
	var targets struct {
		Targets []json.RawMessage `json:"targets"`
	}
	if err := json.Unmarshal(raw, &targets); err != nil {
		fail("panels[%d]: %v", i, err)
	}
	if len(targets.Targets) == 0 {
		fail("panel %q makes no query", title)
	}
	var out []query
	for j, t := range targets.Targets {
		var q prometheus.Dataquery
		if err := real(q.UnmarshalJSONStrict(t)); err != nil {
			fail("panel %q targets[%d] is not a Prometheus query: %v", title, j, err)
		}
		if q.Datasource == nil || q.Datasource.Type == nil || *q.Datasource.Type != "prometheus" {
			fail("panel %q targets[%d]: its datasource is not of type prometheus", title, j)
		}
		ref := ""
		if q.RefId != nil {
			ref = *q.RefId
		}
		out = append(out, query{fmt.Sprintf("panel %s (%s)", title, ref), "panel", q.Expr})
	}
	return out
}
