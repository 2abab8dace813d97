"""One module per page of the site: each turns the committed runs into a `render.Page`."""
