package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// jsonRow is one row as `cotal bench --json` prints it. Figures are medians; a side or ratio
// that was not measured is null, and so are target and met for a row without a target.
type jsonRow struct {
	Workload string   `json:"workload"`
	Case     string   `json:"case"`
	Metric   string   `json:"metric"`
	Unit     string   `json:"unit"`
	Cotal    *float64 `json:"cotal"`
	Raw      *float64 `json:"raw"`
	// RawJSON is raw with receivers decoding the envelope with encoding/json.
	RawJSON *float64 `json:"raw_json"`
	// Ratio is cotal over bare raw, RatioJSON over raw + encoding/json; a target is judged on
	// the one it names.
	Ratio     *float64 `json:"ratio"`
	RatioJSON *float64 `json:"ratio_json"`
	Target    *string  `json:"target"`
	Met       *bool    `json:"met"`
}

// WriteJSON writes rows as JSON Lines: one object per row (workload, case, metric, unit,
// cotal, raw, raw_json, ratio, target, met), so scripts can check targets.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		jr := jsonRow{Workload: r.Workload, Case: r.Case, Metric: r.Metric, Unit: r.Unit,
			Cotal: median(r.Cotal), Raw: median(r.Raw), RawJSON: median(r.RawJSON)}
		if ratio := r.Ratio(); !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
			jr.Ratio = &ratio
		}
		if ratio := r.RatioJSON(); !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
			jr.RatioJSON = &ratio
		}
		if r.Target != nil {
			t, met := r.Target.String(), r.Met()
			jr.Target, jr.Met = &t, &met
		}
		if err := enc.Encode(jr); err != nil {
			return fmt.Errorf("write a JSON row: %w", err)
		}
	}
	return nil
}

// median is s's median, or nil when s was not measured.
func median(s Summary) *float64 {
	if s.Runs == 0 {
		return nil
	}
	return &s.Median
}
