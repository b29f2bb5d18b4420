# ring_epoch_time.gp — tpbench report chart "Ring all-reduce: from scratch vs builtin"
# Data: ring_epoch_time.dat. Redraw from this directory: gnuplot ring_epoch_time.gp
# (writes ring_epoch_time.png and ring_epoch_time.svg).
set encoding utf8
set terminal pngcairo noenhanced size 1100,620 font 'Sans,11'
set output 'ring_epoch_time.png'
set label 101 "Ring all-reduce: from scratch vs builtin" at screen 0.5, screen 0.964516 center font ',14'
set label 102 "mean epoch wall time, median over repeats (error bars: min to max); batch 128/device, 4096 samples/epoch, 2 epochs (1 other config not shown: report" at screen 0.5, screen 0.925806 center font ',10' textcolor rgb '#444444'
set label 103 "--where KEY=VALUE draws another)" at screen 0.5, screen 0.898387 center font ',10' textcolor rgb '#444444'
set tmargin 6
set grid lc rgb '#dddddd'
set key outside right top Left reverse
set xlabel "ranks N"
set ylabel "epoch time (s)"
set xtics ("1" 1, "2" 2, "3" 3, "4" 4)
set yrange [0:*]
set offsets graph 0.05, graph 0.05, 0, 0
plot 'ring_epoch_time.dat' index 0 using 1:2:4:5 with yerrorlines title "ring_all_reduce (from scratch)" lc rgb '#2ca02c' dt 1 lw 2 pt 7 ps 1.2, \
     'ring_epoch_time.dat' index 1 using 1:2:4:5 with yerrorlines title "allreduce (library)" lc rgb '#9467bd' dt 1 lw 2 pt 7 ps 1.2, \
     'ring_epoch_time.dat' index 2 using 1:2:4:5 with yerrorlines title "ddp (builtin)" lc rgb '#d62728' dt 1 lw 2 pt 7 ps 1.2
set terminal svg noenhanced size 1100,620 dynamic font 'Sans,11' background rgb 'white'
set output 'ring_epoch_time.svg'
replot
set output
