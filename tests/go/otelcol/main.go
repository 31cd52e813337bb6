// An OpenTelemetry Collector (otelcol, otlpreceiver and otlphttpexporter of one release)
// for agentprof's tests, with one exporter of its own: `pprofdir` writes every profile the
// collector received, as pprof, into a directory, converted from pdata with the pprofile
// API and google/pprof's writer (code that shares nothing with agentprof's), so the tests
// compare what crossed with `go tool pprof`.
//
//	otelcol --config FILE --feature-gates=service.profilesSupport
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

type dirConfig struct {
	Dir string `mapstructure:"dir"`
}

type dirExporter struct {
	dir string
	n   atomic.Int64
}

func (e *dirExporter) Start(context.Context, component.Host) error { return os.MkdirAll(e.dir, 0o755) }
func (e *dirExporter) Shutdown(context.Context) error              { return nil }
func (e *dirExporter) Capabilities() consumer.Capabilities         { return consumer.Capabilities{} }

// One file per OTLP profile: <request>-<resource>-<scope>-<profile>.pb.gz, and beside it
// a .json with the resource's and the profile's attributes and the sample type, and the
// profile's original_payload (when it has one) as .original.
func (e *dirExporter) ConsumeProfiles(_ context.Context, pd pprofile.Profiles) error {
	req := e.n.Add(1)
	dict := pd.Dictionary()
	rps := pd.ResourceProfiles()
	for r := 0; r < rps.Len(); r++ {
		rp := rps.At(r)
		res := rp.Resource().Attributes().AsRaw()
		sps := rp.ScopeProfiles()
		for s := 0; s < sps.Len(); s++ {
			sp := sps.At(s)
			ps := sp.Profiles()
			for i := 0; i < ps.Len(); i++ {
				p, attrs, err := convert(dict, ps.At(i))
				if err != nil {
					return err
				}
				stem := filepath.Join(e.dir, fmt.Sprintf("%06d-%d-%d-%d", req, r, s, i))
				f, err := os.Create(stem + ".pb.gz.partial")
				if err != nil {
					return err
				}
				if err := p.Write(f); err != nil {
					f.Close()
					return err
				}
				f.Close()
				meta, _ := json.Marshal(map[string]any{
					"resource":   res,
					"scope":      sp.Scope().Name(),
					"attributes": attrs,
					"type":       p.SampleType[0].Type,
					"original":   ps.At(i).OriginalPayload().Len(),
				})
				if err := os.WriteFile(stem+".json", meta, 0o644); err != nil {
					return err
				}
				if orig := ps.At(i).OriginalPayload(); orig.Len() > 0 {
					if err := os.WriteFile(stem+".original", orig.AsRaw(), 0o644); err != nil {
						return err
					}
				}
				if err := os.Rename(stem+".pb.gz.partial", stem+".pb.gz"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func str(dict pprofile.ProfilesDictionary, i int32) string {
	t := dict.StringTable()
	if i < 0 || int(i) >= t.Len() {
		return ""
	}
	return t.At(int(i))
}

// convert writes one OTLP profile (one sample type) as a pprof profile.
func convert(dict pprofile.ProfilesDictionary, op pprofile.Profile) (*profile.Profile, map[string]any, error) {
	st := op.SampleType()
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: str(dict, st.TypeStrindex()), Unit: str(dict, st.UnitStrindex())}},
		TimeNanos:     int64(op.Time().AsTime().UnixNano()),
		DurationNanos: int64(op.DurationNano()),
		Period:        op.Period(),
	}
	if op.Time() == 0 {
		p.TimeNanos = 0
	}
	pt := op.PeriodType()
	if pt.TypeStrindex() != 0 || pt.UnitStrindex() != 0 {
		p.PeriodType = &profile.ValueType{Type: str(dict, pt.TypeStrindex()), Unit: str(dict, pt.UnitStrindex())}
	}
	attrs := map[string]any{}
	at := dict.AttributeTable()
	for _, ai := range op.AttributeIndices().AsRaw() {
		a := at.At(int(ai))
		attrs[str(dict, a.KeyStrindex())] = a.Value().AsRaw()
	}
	funcs := map[int32]*profile.Function{}
	maps := map[int32]*profile.Mapping{}
	locs := map[int32]*profile.Location{}
	mapping := func(i int32) *profile.Mapping {
		if i == 0 {
			return nil
		}
		if m, ok := maps[i]; ok {
			return m
		}
		om := dict.MappingTable().At(int(i))
		m := &profile.Mapping{ID: uint64(len(p.Mapping) + 1), Start: om.MemoryStart(), Limit: om.MemoryLimit(),
			Offset: om.FileOffset(), File: str(dict, om.FilenameStrindex())}
		for _, ai := range om.AttributeIndices().AsRaw() {
			a := at.At(int(ai))
			switch str(dict, a.KeyStrindex()) {
			case "process.executable.build_id.gnu":
				m.BuildID = a.Value().AsString()
			case "pprof.mapping.has_functions":
				m.HasFunctions = a.Value().Bool()
			case "pprof.mapping.has_filenames":
				m.HasFilenames = a.Value().Bool()
			case "pprof.mapping.has_line_numbers":
				m.HasLineNumbers = a.Value().Bool()
			case "pprof.mapping.has_inline_frames":
				m.HasInlineFrames = a.Value().Bool()
			}
		}
		p.Mapping = append(p.Mapping, m)
		maps[i] = m
		return m
	}
	function := func(i int32) *profile.Function {
		if f, ok := funcs[i]; ok {
			return f
		}
		of := dict.FunctionTable().At(int(i))
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: str(dict, of.NameStrindex()),
			SystemName: str(dict, of.SystemNameStrindex()), Filename: str(dict, of.FilenameStrindex()),
			StartLine: of.StartLine()}
		p.Function = append(p.Function, f)
		funcs[i] = f
		return f
	}
	location := func(i int32) *profile.Location {
		if l, ok := locs[i]; ok {
			return l
		}
		ol := dict.LocationTable().At(int(i))
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: mapping(ol.MappingIndex()), Address: ol.Address()}
		for j := 0; j < ol.Lines().Len(); j++ {
			ln := ol.Lines().At(j)
			l.Line = append(l.Line, profile.Line{Function: function(ln.FunctionIndex()), Line: ln.Line(), Column: ln.Column()})
		}
		for _, ai := range ol.AttributeIndices().AsRaw() {
			a := at.At(int(ai))
			if str(dict, a.KeyStrindex()) == "pprof.location.is_folded" {
				l.IsFolded = a.Value().Bool()
			}
		}
		p.Location = append(p.Location, l)
		locs[i] = l
		return l
	}
	samples := op.Samples()
	for i := 0; i < samples.Len(); i++ {
		sample := samples.At(i)
		stack := dict.StackTable().At(int(sample.StackIndex()))
		s := &profile.Sample{Value: sample.Values().AsRaw()}
		for _, li := range stack.LocationIndices().AsRaw() {
			s.Location = append(s.Location, location(li))
		}
		for _, ai := range sample.AttributeIndices().AsRaw() {
			a := at.At(int(ai))
			k := str(dict, a.KeyStrindex())
			if a.Value().Type() == pcommon.ValueTypeInt {
				if s.NumLabel == nil {
					s.NumLabel = map[string][]int64{}
					s.NumUnit = map[string][]string{}
				}
				s.NumLabel[k] = append(s.NumLabel[k], a.Value().Int())
				s.NumUnit[k] = append(s.NumUnit[k], str(dict, a.UnitStrindex()))
			} else {
				if s.Label == nil {
					s.Label = map[string][]string{}
				}
				s.Label[k] = append(s.Label[k], a.Value().AsString())
			}
		}
		p.Sample = append(p.Sample, s)
	}
	if err := p.CheckValid(); err != nil {
		return nil, nil, err
	}
	return p, attrs, nil
}

var dirType = component.MustNewType("pprofdir")

func dirFactory() exporter.Factory {
	return xexporter.NewFactory(dirType,
		func() component.Config { return &dirConfig{} },
		xexporter.WithProfiles(func(_ context.Context, set exporter.Settings, cfg component.Config) (xexporter.Profiles, error) {
			return &dirExporter{dir: cfg.(*dirConfig).Dir}, nil
		}, component.StabilityLevelDevelopment))
}

func components() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	f.Telemetry = otelconftelemetry.NewFactory()
	if f.Receivers, err = otelcol.MakeFactoryMap(otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap(otlphttpexporter.NewFactory(), dirFactory()); err != nil {
		return f, err
	}
	return f, nil
}

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol", Description: "agentprof's test collector", Version: "0.165.0"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
