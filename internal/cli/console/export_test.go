package console

// Sample takes n samples of every space's plots at once, as n ticks of the sampler would.
func (c *Console) Sample(n int) {
	for _, ss := range c.state().spaces {
		for range n {
			ss.sample.take(ss)
		}
	}
}

// ChannelsHeard is how many channels of the first space the console heard live messages on,
// sampled or not yet.
func (c *Console) ChannelsHeard() int {
	ss := c.state().spaces[0]
	names := map[string]bool{}
	ss.feed.mu.Lock()
	for ch := range ss.feed.fresh {
		names[ch] = true
	}
	ss.feed.mu.Unlock()
	ss.sample.mu.Lock()
	defer ss.sample.mu.Unlock()
	for _, smp := range ss.sample.samples {
		for ch := range smp.counts {
			names[ch] = true
		}
	}
	return len(names)
}

// SamplesKept is how many samples the plots keep.
const SamplesKept = samplesKept
