// Pyroscope's own generated Connect client (github.com/grafana/pyroscope/api) asking
// agentprof ui what Grafana's Pyroscope data source and profilecli ask: every method of
// querier.v1.QuerierService that agentprof answers, in the protobuf encoding (and with
// -json, Connect's JSON encoding), then queries that must be refused. Prints one JSON
// document of the answers; writes SelectMergeProfile's pprof to -pprof.
//
//	pyroquery -url http://127.0.0.1:7070 -type process_cpu:cpu:nanoseconds:cpu:nanoseconds \
//	  -selector '{service_name="web"}' -start MS -end MS -step 60 -pprof merged.pb [-json]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"
)

func main() {
	url := flag.String("url", "", "agentprof ui's address")
	typ := flag.String("type", "", "profile type id")
	sel := flag.String("selector", "{}", "label selector")
	start := flag.Int64("start", 0, "ms")
	end := flag.Int64("end", 0, "ms")
	step := flag.Float64("step", 60, "seconds")
	mid := flag.Int64("mid", 0, "ms: the diff's left is start..mid, its right mid..end")
	pprofOut := flag.String("pprof", "", "where SelectMergeProfile's profile goes")
	useJSON := flag.Bool("json", false, "Connect's JSON encoding")
	flag.Parse()

	opts := []connect.ClientOption{}
	if *useJSON {
		opts = append(opts, connect.WithProtoJSON())
	}
	hc := &http.Client{Timeout: 60 * time.Second}
	c := querierv1connect.NewQuerierServiceClient(hc, *url, opts...)
	ctx := context.Background()
	out := map[string]any{}
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}

	pt, err := c.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{Start: *start, End: *end}))
	if err != nil {
		fail("ProfileTypes", err)
	}
	ids := []string{}
	for _, t := range pt.Msg.ProfileTypes {
		ids = append(ids, t.ID)
	}
	out["profile_types"] = ids

	ln, err := c.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Matchers: []string{*sel}, Start: *start, End: *end}))
	if err != nil {
		fail("LabelNames", err)
	}
	out["label_names"] = ln.Msg.Names

	lv, err := c.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Name: "pod", Matchers: []string{*sel}, Start: *start, End: *end}))
	if err != nil {
		fail("LabelValues", err)
	}
	out["pod_values"] = lv.Msg.Names

	sr, err := c.Series(ctx, connect.NewRequest(&querierv1.SeriesRequest{Matchers: []string{*sel}, LabelNames: []string{"service_name", "pod"}, Start: *start, End: *end}))
	if err != nil {
		fail("Series", err)
	}
	sets := [][]string{}
	for _, l := range sr.Msg.LabelsSet {
		set := []string{}
		for _, p := range l.Labels {
			set = append(set, p.Name+"="+p.Value)
		}
		sets = append(sets, set)
	}
	out["series"] = sets

	ss, err := c.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{
		ProfileTypeID: *typ, LabelSelector: *sel, Start: *start, End: *end, Step: *step, GroupBy: []string{"pod"},
	}))
	if err != nil {
		fail("SelectSeries", err)
	}
	series := []map[string]any{}
	for _, s := range ss.Msg.Series {
		labels := map[string]string{}
		for _, p := range s.Labels {
			labels[p.Name] = p.Value
		}
		points := [][2]float64{}
		for _, p := range s.Points {
			points = append(points, [2]float64{float64(p.Timestamp), p.Value})
		}
		series = append(series, map[string]any{"labels": labels, "points": points})
	}
	out["select_series"] = series

	maxNodes := int64(16384)
	fg, err := c.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
		ProfileTypeID: *typ, LabelSelector: *sel, Start: *start, End: *end, MaxNodes: &maxNodes,
	}))
	if err != nil {
		fail("SelectMergeStacktraces", err)
	}
	levels := [][]int64{}
	for _, l := range fg.Msg.Flamegraph.Levels {
		levels = append(levels, l.Values)
	}
	out["flamegraph"] = map[string]any{"names": fg.Msg.Flamegraph.Names, "levels": levels,
		"total": fg.Msg.Flamegraph.Total, "max_self": fg.Msg.Flamegraph.MaxSelf}

	few := int64(5)
	small, err := c.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
		ProfileTypeID: *typ, LabelSelector: *sel, Start: *start, End: *end, MaxNodes: &few,
	}))
	if err != nil {
		fail("SelectMergeStacktraces max_nodes 5", err)
	}
	smallLevels := [][]int64{}
	for _, l := range small.Msg.Flamegraph.Levels {
		smallLevels = append(smallLevels, l.Values)
	}
	out["flamegraph_5"] = map[string]any{"names": small.Msg.Flamegraph.Names, "levels": smallLevels,
		"total": small.Msg.Flamegraph.Total}

	prof, err := c.SelectMergeProfile(ctx, connect.NewRequest(&querierv1.SelectMergeProfileRequest{
		ProfileTypeID: *typ, LabelSelector: *sel, Start: *start, End: *end,
	}))
	if err != nil {
		fail("SelectMergeProfile", err)
	}
	raw, err := proto.Marshal(prof.Msg)
	if err != nil {
		fail("SelectMergeProfile: marshal", err)
	}
	if err := os.WriteFile(*pprofOut, raw, 0o644); err != nil {
		fail("SelectMergeProfile: write", err)
	}
	out["merge_profile_samples"] = len(prof.Msg.Sample)

	left := &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: *typ, LabelSelector: *sel, Start: *start, End: *mid}
	right := &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: *typ, LabelSelector: *sel, Start: *mid + 1, End: *end}
	df, err := c.Diff(ctx, connect.NewRequest(&querierv1.DiffRequest{Left: left, Right: right}))
	if err != nil {
		fail("Diff", err)
	}
	out["diff"] = map[string]any{"left_ticks": df.Msg.Flamegraph.LeftTicks, "right_ticks": df.Msg.Flamegraph.RightTicks,
		"total": df.Msg.Flamegraph.Total, "levels": len(df.Msg.Flamegraph.Levels)}

	// What must be refused, and the code and message it is refused with.
	huge := int64(1_000_000_000)
	refused := map[string]any{}
	for name, call := range map[string]func() error{
		"selector": func() error {
			_, err := c.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
				ProfileTypeID: *typ, LabelSelector: `{service_name="web"`, Start: *start, End: *end}))
			return err
		},
		"type": func() error {
			_, err := c.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
				ProfileTypeID: "nosuch:x:y:z:w", LabelSelector: *sel, Start: *start, End: *end}))
			return err
		},
		"type_id": func() error {
			_, err := c.SelectMergeProfile(ctx, connect.NewRequest(&querierv1.SelectMergeProfileRequest{
				ProfileTypeID: "process_cpu", LabelSelector: *sel, Start: *start, End: *end}))
			return err
		},
		"inverted": func() error {
			_, err := c.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{
				ProfileTypeID: *typ, LabelSelector: *sel, Start: *end, End: *start, Step: *step}))
			return err
		},
		"points": func() error {
			_, err := c.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{
				ProfileTypeID: *typ, LabelSelector: *sel, Start: 1, End: *end, Step: 0.001}))
			return err
		},
		"profile_ids": func() error {
			_, err := c.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
				ProfileTypeID: *typ, LabelSelector: *sel, Start: *start, End: *end,
				ProfileIdSelector: []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7"}}))
			return err
		},
		"max_nodes": func() error {
			_, err := c.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
				ProfileTypeID: *typ, LabelSelector: *sel, Start: *start, End: *end, MaxNodes: &huge}))
			return err
		},
	} {
		err := call()
		var ce *connect.Error
		if err == nil {
			refused[name] = map[string]string{"code": "ok"}
		} else if errors.As(err, &ce) {
			refused[name] = map[string]string{"code": ce.Code().String(), "message": ce.Message()}
		} else {
			refused[name] = map[string]string{"code": "?", "message": err.Error()}
		}
	}
	out["refused"] = refused

	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fail("output", err)
	}
}
