// Command argocd-lua runs Argo CD resource customization scripts (health.lua, discovery.lua, action.lua) the way
// Argo CD's util/lua package runs them, for tests/unit/packaging/test_argocd.py.
//
// What it reproduces of util/lua (lua.go, runLuaWithResourceActionParameters and the Execute* functions):
//   - gopher-lua (the version Argo CD pins) with SkipOpenLibs unless the request sets openLibs (Argo CD's own
//     health and discovery tests set UseOpenLibs; its action tests, argocd-cm customizations without
//     useOpenLibs and every action in production do not);
//   - then, in both modes, the package, base and table libraries opened again and its "safe os" library (time
//     and date only) registered under the name "table" (so table.time and table.date exist and the global os
//     stays nil unless all libraries are open), and preloaded as module "os" for require("os");
//   - a 1 s deadline through the state's context; the globals obj and actionParams;
//   - the object converted as its decodeValue does (a JSON null inside an array is dropped by gopher-lua's
//     Append), results encoded with layeh.com/gopher-json and decoded as Argo CD decodes them (see health,
//     action and discovery below).
//
// The safe os functions are gopher-lua's own os.time and os.date (Argo CD's oslib_safe.go is a copy of them;
// the one difference, os.date("!...", t) with an explicit t, is in local time there and UTC here, does not
// matter to scripts that do not call os.date).
//
// Input on stdin: a JSON array of requests {"kind": "health"|"action"|"discovery"|"value", "script": "...",
// "obj": {...}, "params": {"name": "value"}, "openLibs": false}. Output on stdout: a JSON array of responses,
// one per request, {"result": ...} or {"error": "..."}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
)

type request struct {
	Kind     string            `json:"kind"`
	Script   string            `json:"script"`
	Obj      map[string]any    `json:"obj"`
	Params   map[string]string `json:"params"`
	OpenLibs bool              `json:"openLibs"`
}

type response struct {
	Result any    `json:"result"`
	Error  string `json:"error,omitempty"`
}

// healthStatus is gitops-engine's health.HealthStatus.
type healthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// resourceAction is Argo CD's v1alpha1.ResourceAction.
type resourceAction struct {
	Name   string `json:"name,omitempty"`
	Params []struct {
		Name string `json:"name,omitempty"`
	} `json:"params,omitempty"`
	Disabled    bool   `json:"disabled,omitempty"`
	IconClass   string `json:"iconClass,omitempty"`
	DisplayName string `json:"displayName,omitempty"`
}

// impactedResource is util/lua's ImpactedResource.
type impactedResource struct {
	Resource  map[string]any `json:"resource"`
	Operation string         `json:"operation"`
}

var healthStatuses = map[string]bool{
	"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true,
}

const deadline = 1 * time.Second

func main() {
	var requests []request
	if err := json.NewDecoder(os.Stdin).Decode(&requests); err != nil {
		fmt.Fprintln(os.Stderr, "argocd-lua: reading requests:", err)
		os.Exit(2)
	}
	responses := make([]response, len(requests))
	for i, req := range requests {
		result, err := handle(req)
		if err != nil {
			responses[i] = response{Error: err.Error()}
		} else {
			responses[i] = response{Result: result}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(responses); err != nil {
		fmt.Fprintln(os.Stderr, "argocd-lua: writing responses:", err)
		os.Exit(2)
	}
}

func handle(req request) (any, error) {
	value, err := run(req)
	if err != nil {
		return nil, err
	}
	switch req.Kind {
	case "health":
		return health(value)
	case "action":
		return action(value, req.Obj)
	case "discovery":
		return discovery(value)
	case "value":
		raw, err := luajson.Encode(value)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(raw), nil
	}
	return nil, fmt.Errorf("unknown request kind %q", req.Kind)
}

// safeOs holds gopher-lua's own os.time and os.date, the two functions Argo CD's safe os library offers.
var safeOs = func() map[string]lua.LGFunction {
	scratch := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer scratch.Close()
	if err := scratch.CallByParam(lua.P{Fn: scratch.NewFunction(lua.OpenOs), Protect: true}, lua.LString(lua.OsLibName)); err != nil {
		panic(err)
	}
	osTable := scratch.GetGlobal(lua.OsLibName).(*lua.LTable)
	funcs := map[string]lua.LGFunction{}
	for _, name := range []string{"time", "date"} {
		funcs[name] = osTable.RawGetString(name).(*lua.LFunction).GFunction
	}
	return funcs
}()

func openSafeOs(l *lua.LState) int {
	l.Push(l.RegisterModule(lua.TabLibName, safeOs))
	return 1
}

func loadSafeOs(l *lua.LState) int {
	l.Push(l.SetFuncs(l.NewTable(), safeOs))
	return 1
}

func run(req request) (lua.LValue, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !req.OpenLibs})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.OsLibName, openSafeOs},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, err
		}
	}
	l.PreloadModule(lua.OsLibName, loadSafeOs)

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	l.SetContext(ctx)

	params := l.CreateTable(0, len(req.Params))
	for name, value := range req.Params {
		params.RawSetH(lua.LString(name), decodeValue(l, value))
	}
	l.SetGlobal("actionParams", params)
	l.SetGlobal("obj", decodeValue(l, req.Obj))

	fn, err := l.LoadString(req.Script)
	if err == nil {
		l.Push(fn)
		err = l.PCall(0, lua.MultRet, nil)
	}
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Type == lua.ApiErrorRun {
		apiErr.StackTrace = ""
		err = apiErr
	}
	if err != nil {
		return nil, err
	}
	return l.Get(-1), nil
}

// decodeValue converts a JSON-decoded object into Lua values the way util/lua's decodeValue does.
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(decodeValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}

// health is ExecuteHealthLua: nil or a table that does not decode as a HealthStatus (an empty table is [], a
// non-string message a type error) is an empty status; an unknown status is Unknown.
func health(value lua.LValue) (any, error) {
	switch value.Type() {
	case lua.LTNil:
		return healthStatus{}, nil
	case lua.LTTable:
	default:
		return nil, fmt.Errorf("expect table output from Lua script, not %s", value.Type())
	}
	raw, err := luajson.Encode(value)
	if err != nil {
		return nil, err
	}
	var status healthStatus
	if err := json.Unmarshal(raw, &status); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return healthStatus{}, nil
		}
		return nil, err
	}
	if !healthStatuses[status.Status] {
		return healthStatus{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return status, nil
}

// action is ExecuteResourceAction: an array is a list of impacted resources (operation create or patch), an
// object the patched object (an old-style action); patched objects are cleaned against the input.
func action(value lua.LValue, obj map[string]any) (any, error) {
	if value.Type() != lua.LTTable {
		return nil, fmt.Errorf("expect table output from Lua script, not %s", value.Type())
	}
	raw, err := luajson.Encode(value)
	if err != nil {
		return nil, err
	}
	if len(raw) < 2 {
		return nil, errors.New("Lua output was not a valid json object or array")
	}
	var impacted []impactedResource
	if raw[0] == '[' && raw[len(raw)-1] == ']' {
		if err := json.Unmarshal(raw, &impacted); err != nil {
			return nil, err
		}
		for _, r := range impacted {
			if r.Operation != "create" && r.Operation != "patch" {
				return nil, fmt.Errorf("unsupported operation: %q", r.Operation)
			}
		}
	} else {
		var patched map[string]any
		if err := json.Unmarshal(raw, &patched); err != nil {
			return nil, err
		}
		impacted = []impactedResource{{Resource: patched, Operation: "patch"}}
	}
	for i := range impacted {
		if impacted[i].Operation == "patch" {
			impacted[i].Resource = cleanObject(impacted[i].Resource, obj)
		}
	}
	if impacted == nil {
		impacted = []impactedResource{}
	}
	return impacted, nil
}

// cleanObject is cleanReturnedObj: an empty table that was an object in the input is an object again.
func cleanObject(patched, before map[string]any) map[string]any {
	for key, old := range before {
		current, ok := patched[key]
		if !ok {
			continue
		}
		switch v := current.(type) {
		case map[string]any:
			if o, ok := old.(map[string]any); ok {
				patched[key] = cleanObject(v, o)
			}
		case []any:
			switch o := old.(type) {
			case map[string]any:
				if len(v) == 0 {
					patched[key] = map[string]any{}
				}
			case []any:
				patched[key] = cleanArray(v, o)
			}
		}
	}
	return patched
}

func cleanArray(patched, before []any) []any {
	for i := range patched {
		if i >= len(before) {
			break
		}
		switch v := patched[i].(type) {
		case map[string]any:
			if o, ok := before[i].(map[string]any); ok {
				patched[i] = cleanObject(v, o)
			}
		case []any:
			if o, ok := before[i].([]any); ok {
				patched[i] = cleanArray(v, o)
			}
		}
	}
	return patched
}

// discovery is ExecuteResourceActionDiscovery for one script: the offered actions (sorted by name here; Argo CD
// lists them in map order), an action whose table is empty only named; disabled only when a boolean says so.
func discovery(value lua.LValue) (any, error) {
	if value.Type() != lua.LTTable {
		return nil, fmt.Errorf("expect table output from Lua script, not %s", value.Type())
	}
	raw, err := luajson.Encode(value)
	if err != nil {
		return nil, fmt.Errorf("error in converting to lua table: %w", err)
	}
	offered := []resourceAction{}
	if string(raw) == "[]" {
		return offered, nil
	}
	byName := map[string]any{}
	if err := json.Unmarshal(raw, &byName); err != nil {
		return nil, fmt.Errorf("error unmarshaling action table: %w", err)
	}
	for name, definition := range byName {
		found := resourceAction{Name: name}
		if fields, ok := definition.(map[string]any); ok {
			if disabled, ok := fields["disabled"].(bool); ok {
				found.Disabled = disabled
			}
		}
		if _, empty := definition.([]any); !empty {
			encoded, err := json.Marshal(definition)
			if err != nil {
				return nil, fmt.Errorf("error marshaling resource action: %w", err)
			}
			if err := json.Unmarshal(encoded, &found); err != nil {
				return nil, fmt.Errorf("error unmarshaling resource action: %w", err)
			}
		}
		offered = append(offered, found)
	}
	sort.Slice(offered, func(i, j int) bool { return offered[i].Name < offered[j].Name })
	return offered, nil
}
