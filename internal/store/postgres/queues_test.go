package postgres

import (
	"testing"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/storetest"
)

func TestQueuesContract(t *testing.T) {
	storetest.RunQueues(t, func(t *testing.T) hub.Store { return openTest(t) })
}
